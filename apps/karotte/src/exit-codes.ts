/** Exit codes of the contract: 0 verdict/ok, 1 error or weaker confinement, 2 bad usage. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
