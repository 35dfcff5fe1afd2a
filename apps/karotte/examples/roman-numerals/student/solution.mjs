/**
 * Convert an integer from 1 to 3999 to a Roman numeral, e.g. toRoman(1994) === 'MCMXCIV'.
 * @param {number} n
 * @returns {string}
 */
export function toRoman(n) {
  throw new Error('not implemented');
}
