import { Navigate, Route, Routes } from 'react-router';
import { useSession } from '../../api/session.tsx';
import { PermissionNotice } from '../../components/PermissionNotice.tsx';
import { NotFoundPage } from '../NotFoundPage.tsx';
import { CloudConfigPage } from './CloudConfigPage.tsx';
import { RolesPage } from './RolesPage.tsx';
import { RunnersPage } from './RunnersPage.tsx';
import { UsersPage } from './UsersPage.tsx';

/** `/admin/*`: users, roles, runners and the cloud-config generator, each behind its permission. */
export default function AdminRoutes() {
  const { can } = useSession();
  const first = can('view_user') ? 'users' : can('view_role') ? 'roles' : can('view_runner') ? 'runners' : 'cloud-config';
  return (
    <Routes>
      <Route index element={<Navigate to={first} replace />} />
      <Route path="users" element={can('view_user') ? <UsersPage /> : <PermissionNotice what="view users" />} />
      <Route path="roles" element={can('view_role') ? <RolesPage /> : <PermissionNotice what="view roles" />} />
      <Route path="runners" element={can('view_runner') ? <RunnersPage /> : <PermissionNotice what="view runners" />} />
      <Route path="cloud-config" element={<CloudConfigPage />} />
      <Route path="*" element={<NotFoundPage />} />
    </Routes>
  );
}
