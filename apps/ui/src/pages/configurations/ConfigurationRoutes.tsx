import { Route, Routes } from 'react-router';
import { useSession } from '../../api/session.tsx';
import { PermissionNotice } from '../../components/PermissionNotice.tsx';
import { NotFoundPage } from '../NotFoundPage.tsx';
import { ConfigurationCreatePage } from './ConfigurationCreatePage.tsx';
import { ConfigurationListPage } from './ConfigurationListPage.tsx';
import { ConfigurationPage } from './ConfigurationPage.tsx';

/** `/playbook-configurations/*`: the list, `new`, and one configuration. */
export default function ConfigurationRoutes() {
  const { can } = useSession();
  if (!can('view_playbook_configuration')) return <PermissionNotice what="view playbook configurations" />;
  return (
    <Routes>
      <Route index element={<ConfigurationListPage />} />
      <Route path="new" element={can('create_playbook_configuration') ? <ConfigurationCreatePage /> : <PermissionNotice what="create playbook configurations" />} />
      <Route path=":id" element={<ConfigurationPage />} />
      <Route path="*" element={<NotFoundPage />} />
    </Routes>
  );
}
