export { loadConfig, DEFAULT_CONFIG, ENV_KEYS, ConfigError, type Config } from './config.js';
export { openDatabase, isPostgresUrl } from './db/client.js';
export type { Database, Dialect } from './db/database.js';
export { createContainer, type Container, type ContainerPorts } from './container.js';
export { buildApp, type AppDeps } from './http/app.js';
export { startGrpcServer, type GrpcServer } from './grpc/grpc.server.js';
export { createLogger } from './logger.js';
export { main } from './main.js';
export type { Clock, Mail, Mailer } from './ports.js';
