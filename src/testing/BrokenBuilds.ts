/**
 * Deliberately broken brokers, for testing that the invariants catch what
 * they claim to. Each rewrites the frames the (real, unchanged) broker writes
 * to its connections, as a routing bug would: production code is untouched.
 *
 * Each is a factory: every world gets a fresh fault with its own state.
 *
 * @example
 * // The invariants must catch a broker that loses an acknowledged message.
 * const report = yield* runWorkload({ seed: 3, brokerFault: dropNthMessage(3) })
 * report.violations[0]?.kind // "silent-loss"
 * // … and one that lets a plain send cross a group.
 * const crossed = yield* runWorkload({ seed: 3, brokerInputFault: ignoreGroups() }, undefined, { groups: true })
 */
import type { BrokerInputFault, BrokerOutputFault } from "./SimLink.ts"

const isMessage = (frame: string): boolean => frame.startsWith(`{"type":"message"`)

/** Sender id of a `message` frame, cheaply (the broker writes `from` right after `type`). */
const senderOf = (frame: string): string => {
  const match = /"from":\{"id":"([^"]*)"/.exec(frame)
  return match?.[1] ?? ""
}

/** Silently drops the `n`-th message the broker routes (1-based): the sender was told it was delivered. */
export const dropNthMessage = (n = 1) => (): BrokerOutputFault => {
  let seen = 0
  return (_link, frames) =>
    frames.filter((frame) => {
      if (!isMessage(frame)) return true
      seen++
      return seen !== n
    })
}

/** Writes the `n`-th routed message twice. */
export const duplicateNthMessage = (n = 1) => (): BrokerOutputFault => {
  let seen = 0
  return (_link, frames) =>
    frames.flatMap((frame) => {
      if (!isMessage(frame)) return [frame]
      seen++
      return seen === n ? [frame, frame] : [frame]
    })
}

/**
 * Holds back the first routed message and writes it after the next message
 * from the same sender on the same connection: a FIFO violation.
 */
export const swapFirstTwoMessages = () => (): BrokerOutputFault => {
  let held: { readonly link: number; readonly frame: string } | undefined
  let done = false
  return (link, frames) => {
    const out: Array<string> = []
    for (const frame of frames) {
      if (done || !isMessage(frame)) {
        out.push(frame)
      } else if (held === undefined) {
        held = { link, frame }
      } else if (held.link === link && senderOf(held.frame) === senderOf(frame)) {
        out.push(frame, held.frame)
        held = undefined
        done = true
      } else {
        out.push(frame)
      }
    }
    return out
  }
}

/**
 * A broker that ignores `group` in registrations (as if groups-v1 were
 * granted but its namespaces never made): every session lands in its scope's
 * default namespace, so a plain send by name or id reaches a session of
 * another group, and the broker acknowledges it. Rewrites what the broker
 * reads (a `BrokerInputFault`); the broker itself is unchanged. The ledger
 * must report `cross-group` and `cross-group-accepted`.
 *
 * With `onlyNth`, only the `onlyNth`-th registration that names a group
 * other than `default` loses it (1-based): one session registers once in the
 * wrong namespace (until it registers again), so only sends to or from it
 * meanwhile cross.
 */
export const ignoreGroups = (onlyNth?: number) => (): BrokerInputFault => {
  let seen = 0
  return (_link, frames) =>
    frames.map((frame) => {
      if (!frame.includes(`"register"`) || !frame.includes(`"group":`)) return frame
      const parsed: unknown = JSON.parse(frame)
      if (typeof parsed !== "object" || parsed === null || !("type" in parsed) || parsed.type !== "register" || !("group" in parsed)) {
        return frame
      }
      if (typeof parsed.group !== "string" || parsed.group.trim() === "" || parsed.group.trim() === "default") return frame
      seen++
      if (onlyNth !== undefined && seen !== onlyNth) return frame
      const { group: _dropped, ...rest } = parsed
      return JSON.stringify(rest)
    })
}

/**
 * A broker that coalesces replace messages under the wrong key (as if the
 * message id were part of it): every replace send gets a thread of its own,
 * so nothing is ever replaced and every update of a burst is delivered when
 * its window closes. Rewrites what the broker reads; the ledger (which keys
 * by what the client wrote) must report `replace-not-latest`.
 */
export const replaceKeyPerMessage = () => (): BrokerInputFault => (_link, frames) =>
  frames.map((frame) => {
    if (!frame.includes(`"replace"`) || !frame.includes(`"threadId":`)) return frame
    const parsed: unknown = JSON.parse(frame)
    if (
      typeof parsed !== "object" || parsed === null || !("type" in parsed) || parsed.type !== "send" ||
      !("threadId" in parsed) || typeof parsed.threadId !== "string" || !("message" in parsed) ||
      typeof parsed.message !== "object" || parsed.message === null || !("id" in parsed.message) ||
      typeof parsed.message.id !== "string"
    ) return frame
    return JSON.stringify({ ...parsed, threadId: `${parsed.threadId}#${parsed.message.id.slice(0, 8)}` })
  })

/**
 * A broker that forgets to forward `delivery: "passive"` (as if it dropped
 * the mode when encoding the message): the recipient treats the message as a
 * steer and wakes its model. The ledger must report `passive-woke-model`.
 */
export const forgetPassive = () => (): BrokerOutputFault => (_link, frames) =>
  frames.map((frame) => isMessage(frame) ? frame.replace(`,"delivery":"passive"`, "") : frame)

const isTopicRecord = (frame: string): boolean => frame.startsWith(`{"type":"topic_record"`)

/** The (publisher, topic) of a `topic_record` frame, and its revision. */
const topicRecordOf = (frame: string): { readonly key: string; readonly revision: number } | undefined => {
  const parsed: unknown = JSON.parse(frame)
  const entry = typeof parsed === "object" && parsed !== null ? Reflect.get(parsed, "entry") : undefined
  const from = typeof entry === "object" && entry !== null ? Reflect.get(entry, "from") : undefined
  const record = typeof entry === "object" && entry !== null ? Reflect.get(entry, "record") : undefined
  const id = typeof from === "object" && from !== null ? Reflect.get(from, "id") : undefined
  const topic = typeof record === "object" && record !== null ? Reflect.get(record, "topic") : undefined
  const revision = typeof record === "object" && record !== null ? Reflect.get(record, "revision") : undefined
  return typeof id === "string" && typeof topic === "string" && typeof revision === "number"
    ? { key: `${id}\u0000${topic}`, revision }
    : undefined
}

/**
 * Topics: holds back the first `topic_record` the broker writes and writes
 * it after the next one of the same publisher and topic on the same
 * connection, so a subscriber is sent an older revision after a newer one.
 * The ledger must report `topic-revision-backwards`.
 */
export const swapTopicRecords = () => (): BrokerOutputFault => {
  let held: { readonly link: number; readonly frame: string; readonly key: string } | undefined
  let done = false
  return (link, frames) => {
    const out: Array<string> = []
    for (const frame of frames) {
      const record = done || !isTopicRecord(frame) ? undefined : topicRecordOf(frame)
      if (record === undefined) {
        out.push(frame)
      } else if (held === undefined) {
        held = { link, frame, key: record.key }
      } else if (held.link === link && held.key === record.key) {
        out.push(frame, held.frame)
        held = undefined
        done = true
      } else {
        out.push(frame)
      }
    }
    return out
  }
}

/**
 * Topics: writes every `blocker` or `decision` record twice, the copy
 * renumbered one revision up (a broker that numbers fan-out itself), so a
 * subscriber's runtime takes the copy for a new revision and interrupts its
 * agent again with the same publication. The ledger must report
 * `topic-double-interrupt`.
 */
export const renumberInterruptingRecords = () => (): BrokerOutputFault => (_link, frames) =>
  frames.flatMap((frame) => {
    if (!isTopicRecord(frame) || !/"event":"(blocker|decision)"/.test(frame)) return [frame]
    const record = topicRecordOf(frame)
    if (record === undefined) return [frame]
    return [frame, frame.replace(`"revision":${record.revision},`, `"revision":${record.revision + 1},`)]
  })

/**
 * A broker that forgets what it kept for a reader's return: drops every
 * `message_control` it writes in the same batch as a `registered` (the
 * controls a registration gets at once — a control kept for the returning
 * instance, KeptControls.ts, or the cancel behind a cancelled copy given
 * back to it, WithdrawnCopies.ts), as if neither kept them. The ledger must
 * report `control-never-reached-reader` when the returning instance had
 * read the message.
 */
export const dropControlsAtReturn = () => (): BrokerOutputFault => (_link, frames) =>
  frames.some((frame) => frame.startsWith(`{"type":"registered"`))
    ? frames.filter((frame) => !frame.startsWith(`{"type":"message_control"`))
    : frames
