// node-postgres's own conversion of a parameter's value, which its typings leave out
// (`pg/lib/utils.js`, exported by the package): used to write parameters out as literals
// exactly as the driver would send them (db/postgres.ts `inlineParameters`).
declare module 'pg/lib/utils.js' {
  const utils: { prepareValue(value: unknown): string | Buffer | null };
  export default utils;
}
