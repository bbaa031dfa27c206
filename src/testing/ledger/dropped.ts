/**
 * Frames a client took off a connection it had already dropped itself, and
 * the check that its session was not handed their messages
 * (`handed-after-drop`).
 *
 * A client that drops its own connection (`destroy`: a failed liveness
 * probe) may still get frames its reader took from the socket before the
 * drop and returned after it (the reader was stalled). `SimLink` does not
 * count them as read — the ledger counted them lost with the drop — so the
 * wire taps never see them. Under `received-v1` such a message is the
 * broker's: it gives it to the session's next connection, or withdraws it
 * when its sender cancelled it meanwhile, and the client does not hand it on
 * (src/client/ConnectionReader.ts, `dropped`; seed 10425). This module
 * remembers those late frames and judges what a session is handed against
 * them: its host (`Ledger.hostDelivered`), or its ask (a reply).
 */
import { decodeBrokerFrameText, isFrameDecodeError } from "../../protocol/decode.ts"
import { type LedgerState, type MessageRecord, nameOf, recordFrom } from "./state.ts"
import { check, note } from "./trace.ts"

/** A message frame a client took on a connection after it had dropped that connection itself. */
export interface TakenAfterDrop {
  /** The connection it came off. */
  readonly link: number
  /** When the client's reader returned it (simulated ms). */
  readonly at: number
}

/**
 * The client of link `linkId` got `frames` from its reader after it had
 * dropped that connection itself: not read (the broker keeps what a
 * `received-v1` client did not confirm). Remembered per message when the
 * broker granted the connection `received-v1`; without it the broker counts
 * a written message delivered, and handing it on is the client's only way
 * not to lose it.
 */
export const takenAfterDrop = (state: LedgerState, linkId: number, frames: ReadonlyArray<string>): void => {
  const link = state.links.get(linkId)
  if (link === undefined || !link.receivedV1) return
  for (const text of frames) {
    if (!text.startsWith(`{"type":"message"`)) continue
    const frame = decodeBrokerFrameText(text)
    if (isFrameDecodeError(frame) || frame.type !== "message") continue
    const record = recordFrom(state, frame.message.id, frame.from.id)
    if (record === undefined) continue
    const taken = state.takenAfterDrop.get(record.id)
    if (taken === undefined) state.takenAfterDrop.set(record.id, [{ link: linkId, at: state.now() }])
    else taken.push({ link: linkId, at: state.now() })
    note(state, `   ${nameOf(state, link.owner)}'s client took ${record.alias} off link #${linkId} after dropping it itself: not read`)
  }
}

/**
 * `handed-after-drop`: session `receiver` (its host, or its ask) was handed
 * `record` though no client of it had read it on a connection it held; the
 * only copies its clients took came off connections they had already
 * dropped themselves (`takenAfterDrop`). A copy read since on a connection
 * of the receiver explains the hand-off, whichever copy it was.
 */
export const checkHandedAfterDrop = (state: LedgerState, record: MessageRecord, receiver: string, to: string): void => {
  const taken = state.takenAfterDrop.get(record.id)
  if (taken === undefined) return
  const late = taken.filter((entry) => state.links.get(entry.link)?.owner === receiver)
  if (late.length === 0) return
  const read = record.reads.some((entry) => state.links.get(entry.link)?.owner === receiver)
  check(state, read, "handed-after-drop", () =>
    `${record.alias} from ${nameOf(state, record.sender)} was handed to ${to}, which no client of ${
      nameOf(state, receiver)
    } had read: its client took it off ${
      late.map((entry) => `link #${entry.link} at ${entry.at} ms`).join(", ")
    } after it had dropped that connection itself (received-v1: the broker keeps such a message)`)
}
