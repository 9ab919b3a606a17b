// The error helpers of the UI: `errorMessage` (the API's text; 403 → "You do not have the
// permission ..."), `errorTitle`, `isApiStatus`, and the `<ErrorNotice error={...} />` alert.
export { errorMessage, errorTitle, isApiStatus } from './messages.ts';
export { ErrorNotice, type ErrorNoticeProps } from './ErrorNotice.tsx';
