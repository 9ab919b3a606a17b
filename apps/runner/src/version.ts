/** The version of the runner, sent in its hello. */
export const VERSION = '0.1.0';
