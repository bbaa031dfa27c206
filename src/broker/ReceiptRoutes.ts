/**
 * Receipt routes (P70, P71, P72): for a delivered message, which sender may be
 * told about receipts and which receiver may send them. Created on socket
 * delivery, kept for an hour, dropped when either side leaves.
 */

export interface ReceiptRoute {
  readonly messageKey: string
  readonly senderKey: string
  readonly receiverKey: string
  readonly createdAt: number
}

export class ReceiptRoutes {
  private readonly routes = new Map<string, ReceiptRoute>()
  private readonly retentionMs: number
  private readonly capacity: number

  constructor(retentionMs: number, capacity: number) {
    this.retentionMs = retentionMs
    this.capacity = capacity
  }

  get(messageKey: string, now: number): ReceiptRoute | undefined {
    const route = this.routes.get(messageKey)
    if (route === undefined || now - route.createdAt > this.retentionMs) return undefined
    return route
  }

  add(route: ReceiptRoute, onEvict: (route: ReceiptRoute) => void): void {
    this.routes.delete(route.messageKey)
    this.routes.set(route.messageKey, route)
    if (this.routes.size > this.capacity) {
      const oldest = this.routes.values().next()
      if (oldest.done !== true) {
        this.routes.delete(oldest.value.messageKey)
        onEvict(oldest.value)
      }
    }
  }

  delete(messageKey: string): ReceiptRoute | undefined {
    const route = this.routes.get(messageKey)
    if (route !== undefined) this.routes.delete(messageKey)
    return route
  }

  /** Drops expired routes from the front; `onExpire` lets owners unlink them. */
  prune(now: number, onExpire: (route: ReceiptRoute) => void): void {
    for (const route of this.routes.values()) {
      if (now - route.createdAt <= this.retentionMs) break
      this.routes.delete(route.messageKey)
      onExpire(route)
    }
  }
}
