/** The version of the service, reported by `GET /v1/info/`. */
export const VERSION = '0.1.0';
