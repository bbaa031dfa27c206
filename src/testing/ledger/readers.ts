/**
 * What a session's clients read of one message, asked while the world runs:
 * a query over the ledger's records of reads (`MessageRecord.reads`), no
 * check. The simulation's `ReaderReturn` op (simulation/readerReturn.ts)
 * waits on it for the read its case needs, which the host being handed the
 * message does not tell once a busy host refuses hand-offs
 * (`--host-refusals`): the client has read it, and confirms it once the
 * host journal's checkpoint lands, while the host still refuses it.
 */
import type { LedgerState } from "./state.ts"

/** How far a read must have gone: the `message` frame read, or read and a `received` covering it written on that connection. */
export type ReaderStage = "read" | "confirmation written"

/**
 * Whether a client of session `owner` read a message whose text is `text` on one of its connections and,
 * for `confirmation written`, wrote a `received` covering it there (a connection without `received-v1`
 * confirms by reading).
 */
export const readByClientOf = (state: LedgerState, owner: string, text: string, stage: ReaderStage): boolean => {
  for (const record of state.messages.values()) {
    if (record.message.content.text !== text) continue
    for (const read of record.reads) {
      const link = state.links.get(read.link)
      if (link === undefined || link.owner !== owner) continue
      if (stage === "read" || !link.receivedV1 || link.confirmationWritten >= read.frame) return true
    }
  }
  return false
}
