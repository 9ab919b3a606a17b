/** The output of the facts script was not what it should be. */
export class FactsParseError extends Error {
  override readonly name = 'FactsParseError';
}
