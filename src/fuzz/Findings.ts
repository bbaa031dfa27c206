/**
 * What a fuzz campaign found: every broken promise, by kind, with the first
 * few examples of each. One `Findings` per campaign, written by the healthy
 * sessions, the attackers, the health probe and the final checks — plain
 * synchronous code on the fuzzer's one thread.
 */

/** The promises a campaign checks (docs/security.md), one kind per way of breaking one, with what it means. */
export const FINDING_KINDS = {
  "broker-crashed": "The broker process died during the campaign, or did not answer the final health probe.",
  "broker-hung": "The broker process was alive but stopped answering: no health probe answered for the hung bound (30 s), or no memory report when asked.",
  "frame-too-large": 'The broker wrote a frame over 1 MiB to some connection (a strict client drops it, P02/P04).',
  "strict-decode": 'A frame to a healthy session that a strict pi-intercom client rejects (P04).',
  "health-late": "A fresh connection's `health` was answered later than the deadline (1 s).",
  "health-unanswered": "A fresh connection's `health` was not answered at all (within 5 s), or it could not connect.",
  "healthy-disconnected": "A healthy session's connection was closed by the broker.",
  "healthy-loss": 'A message between healthy sessions, acknowledged, never arrived.',
  "healthy-duplicate": 'A message between healthy sessions arrived twice.',
  "healthy-reorder": 'Messages from one healthy session reached another out of order.',
  "healthy-altered": "A message between healthy sessions arrived with a text other than the one it was sent with.",
  "healthy-stalled": "A healthy session's request got no answer within 10 s.",
  "healthy-refused": "A healthy session's valid send or cancel was refused.",
  "forged-frame": 'A healthy session got a frame no healthy session caused: a message, an answer, a receipt or a control.',
  "ask-hijacked": 'A healthy ask was not answered by its target: its edge was taken (the reply refused) or the reply went elsewhere.',
  "receipt-lost": "A healthy receiver's receipt never reached the healthy sender.",
  "mail-lost": 'Mail a healthy session queued for an absent healthy session never arrived, and its sender was not told.',
  "mail-evicted": "Another session's flood evicted a healthy session's queued mail (its sender was told).",
  "list-hides-session": 'A `list` left out a live healthy session.',
  "log-injection": "A line of the broker's log was forged by client-supplied text (a newline in a frame).",
  "slowloris-kept": 'A connection stalled mid-frame was not closed within the bound.',
  "connections-kept": 'After every attacker closed its sockets, the broker still held connections (15 s later).',
  "memory-retained": "After the attackers left, the broker's heap (after two forced GCs) grew by more than the bound."
} as const

/** A way of breaking one of the promises. */
export type FindingKind = keyof typeof FINDING_KINDS

/** Whether `name` is a finding kind. */
export const isFindingKind = (name: string): name is FindingKind => Object.hasOwn(FINDING_KINDS, name)

/** How many examples of each kind a report keeps. */
const EXAMPLES = 3

/**
 * The findings the broker is known to produce today, each with the issue it
 * belongs to. The CI campaign tolerates these and fails on anything else.
 * Empty: the nine findings of "Hostile and oversized input cannot hurt other
 * sessions" are fixed, each with its regression test (test/broker/hostile*.ts).
 */
export const KNOWN_FINDINGS: Readonly<Partial<Record<FindingKind, string>>> = {}

/** The findings of one campaign. */
export class Findings {
  private readonly counts = new Map<FindingKind, number>()
  private readonly examples = new Map<FindingKind, Array<string>>()

  /** Records one broken promise. */
  add(kind: FindingKind, detail: string): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1)
    const list = this.examples.get(kind) ?? []
    if (list.length < EXAMPLES) list.push(detail)
    this.examples.set(kind, list)
  }

  /** Records a finding when `ok` is false; returns `ok`. */
  check(ok: boolean, kind: FindingKind, detail: () => string): boolean {
    if (!ok) this.add(kind, detail())
    return ok
  }

  /** Every kind found, with its count and first examples, in a stable order. */
  summary(): ReadonlyArray<{ readonly kind: FindingKind; readonly count: number; readonly examples: ReadonlyArray<string> }> {
    return [...this.counts.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([kind, count]) => ({ kind, count, examples: this.examples.get(kind) ?? [] }))
  }
}
