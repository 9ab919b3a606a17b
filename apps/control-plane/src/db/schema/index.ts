export { users } from './users.js';
export { roles } from './roles.js';
export { credentials } from './credentials.js';
export { tokens } from './tokens.js';
export { passwordResets } from './password-resets.js';
export { secrets } from './secrets.js';
