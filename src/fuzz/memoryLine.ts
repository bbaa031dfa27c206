/**
 * The prefix of the line the GC hook (gcHook.ts) prints in a broker under
 * test: the contract between the hook and the fuzzer that reads it
 * (BrokerUnderTest.ts). Kept free of imports, so the hook loads nothing.
 */

/** The prefix of the hook's stderr line; JSON follows after one space. */
export const MEMORY_LINE = "@@fuzz-memory"
