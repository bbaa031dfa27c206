/**
 * Open asks (P61–P64): message id → who asked whom. A reply is accepted only
 * along an open edge, and a mutual ask is refused while the reverse edge is
 * open. Edges expire after the ask timeout; they outlive disconnects (P61).
 */
import { AgedMap } from "./AgedMap.ts"

export interface AskEdge {
  readonly messageKey: string
  readonly askerKey: string
  readonly targetKey: string
}

const pairKey = (askerKey: string, targetKey: string) => `${askerKey}\u0001${targetKey}`

export class AskEdges {
  private readonly edges = new AgedMap<string, AskEdge>()
  private readonly openPerPair = new Map<string, number>()
  private readonly timeoutMs: number

  constructor(timeoutMs: number) {
    this.timeoutMs = timeoutMs
  }

  get size(): number {
    return this.edges.size
  }

  get(messageKey: string): AskEdge | undefined {
    return this.edges.get(messageKey)
  }

  open(edge: AskEdge, now: number): void {
    this.delete(edge.messageKey)
    this.edges.set(edge.messageKey, edge, now)
    const pair = pairKey(edge.askerKey, edge.targetKey)
    this.openPerPair.set(pair, (this.openPerPair.get(pair) ?? 0) + 1)
  }

  delete(messageKey: string): void {
    const edge = this.edges.delete(messageKey)
    if (edge !== undefined) this.closePair(edge)
  }

  /** Does `askerKey` wait for `targetKey`, not counting the edge `exceptKey`? */
  isWaiting(askerKey: string, targetKey: string, exceptKey: string | undefined): boolean {
    let count = this.openPerPair.get(pairKey(askerKey, targetKey)) ?? 0
    if (exceptKey !== undefined) {
      const excepted = this.edges.get(exceptKey)
      if (excepted !== undefined && excepted.askerKey === askerKey && excepted.targetKey === targetKey) count--
    }
    return count > 0
  }

  prune(now: number): void {
    for (const edge of this.edges.expire(now - this.timeoutMs)) this.closePair(edge)
  }

  private closePair(edge: AskEdge): void {
    const pair = pairKey(edge.askerKey, edge.targetKey)
    const count = (this.openPerPair.get(pair) ?? 1) - 1
    if (count <= 0) this.openPerPair.delete(pair)
    else this.openPerPair.set(pair, count)
  }
}
