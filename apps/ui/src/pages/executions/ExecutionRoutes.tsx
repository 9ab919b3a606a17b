import { Route, Routes } from 'react-router';
import { useSession } from '../../api/session.tsx';
import { PermissionNotice } from '../../components/PermissionNotice.tsx';
import { NotFoundPage } from '../NotFoundPage.tsx';
import { ExecutionListPage } from './ExecutionListPage.tsx';
import { ExecutionPage } from './ExecutionPage.tsx';

/** `/executions/*`: the list and one execution. */
export default function ExecutionRoutes() {
  const { can } = useSession();
  if (!can('view_execution')) return <PermissionNotice what="view executions" />;
  return (
    <Routes>
      <Route index element={<ExecutionListPage />} />
      <Route path=":id" element={<ExecutionPage />} />
      <Route path="*" element={<NotFoundPage />} />
    </Routes>
  );
}
