/**
 * The numbers of a fuzz campaign for its summary table: frames and bytes
 * sent per attack kind, connections opened, the largest frame the broker
 * wrote (and to whom), and the health probe's latencies. One `Tally` per
 * campaign, updated synchronously by whoever sends or measures.
 */

/** Frames and bytes one attack kind sent, and how often it ran. */
export interface KindTally {
  runs: number
  frames: number
  bytes: number
  /** Time its runs took, in all (ms): attacks that wait on the broker show here. */
  ms: number
}

/** The campaign's counters; see the module header. */
export class Tally {
  readonly byKind = new Map<string, KindTally>()
  /** Connections the attackers opened (attempts, including refused dials). */
  connections = 0
  /** Dials the broker did not accept. */
  dialFailures = 0
  /** Frames the attackers sent (each complete or partial frame counts once). */
  frames = 0
  /** Bytes the attackers sent. */
  bytes = 0
  /** The largest frame payload the broker wrote to any connection, and where. */
  maxFrameBytes = 0
  maxFrameWhere = "-"
  /** Health probes made, the worst latency (ms), and how many missed the deadline. */
  probes = 0
  worstHealthMs = 0
  lateProbes = 0

  /** One run of an attack kind took `ms`. */
  ran(kind: string, ms: number): void {
    const entry = this.kind(kind)
    entry.runs++
    entry.ms += ms
  }

  /** An attack kind sent `frames` frames of `bytes` bytes in all. */
  sent(kind: string, frames: number, bytes: number): void {
    const entry = this.kind(kind)
    entry.frames += frames
    entry.bytes += bytes
    this.frames += frames
    this.bytes += bytes
  }

  /** The broker wrote a frame of `bytes` to the connection described by `where`. */
  frameWritten(bytes: number, where: string): void {
    if (bytes > this.maxFrameBytes) {
      this.maxFrameBytes = bytes
      this.maxFrameWhere = where
    }
  }

  /** A health probe took `ms` (or did not finish: pass its timeout). */
  probed(ms: number, late: boolean): void {
    this.probes++
    if (ms > this.worstHealthMs) this.worstHealthMs = ms
    if (late) this.lateProbes++
  }

  private kind(kind: string): KindTally {
    let entry = this.byKind.get(kind)
    if (entry === undefined) this.byKind.set(kind, entry = { runs: 0, frames: 0, bytes: 0, ms: 0 })
    return entry
  }
}
