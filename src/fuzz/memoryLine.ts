/**
 * The prefix of the line the GC hook (gcHook.ts) prints in a broker under
 * test: the contract between the hook and the fuzzer that reads it
 * (BrokerUnderTest.ts), and the variable that tells the hook it is one.
 * Kept free of imports, so the hook loads nothing else.
 */

/** The prefix of the hook's stderr line; JSON follows after one space. */
export const MEMORY_LINE = "@@fuzz-memory"

/** The environment variable naming a fuzzed broker's temp dir: set, the GC hook ends the broker when the fuzzer goes (gcHook.ts). */
export const FUZZ_DIR_ENV = "EIFZ_DIR"
