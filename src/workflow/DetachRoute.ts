/**
 * The route of a foreground detach handshake (C-ORD-10…15) and its wire
 * shapes: the parent's `probe`/`commit` requests and the child's
 * acknowledgements. Both sides compare routes field by field with the
 * functions here, so "the same route" means one thing everywhere.
 */

/**
 * A handshake route (C-ORD-10): which message, from whom, to which child,
 * in which parent runtime generation. `requestId` is the message id.
 *
 * @category models
 * @since 0.1.0
 */
export interface DetachRoute {
  readonly requestId: string
  readonly messageId: string
  readonly childIntercomTarget: string
  readonly senderId: string
  readonly runtimeGeneration: string
}

/**
 * The two phases of the handshake.
 *
 * @category models
 * @since 0.1.0
 */
export type DetachPhase = "probe" | "commit"

/**
 * What the parent sends the foreground child.
 *
 * @category models
 * @since 0.1.0
 */
export interface DetachRequest extends DetachRoute {
  readonly phase: DetachPhase
}

/**
 * What the child answers. Only `accepted: true` with every route field and
 * the phase matching counts (C-ORD-15).
 *
 * @category models
 * @since 0.1.0
 */
export interface DetachAck extends DetachRoute {
  readonly phase: DetachPhase
  readonly accepted: boolean
}

/**
 * The outcome of offering a message to the foreground child:
 * - `delivered`: the child committed and detached; surface the message now (C-ORD-13);
 * - `unclaimed`: no live matching child, no acknowledgement in time, or a
 *   refusal; use the ordinary fallback, never drop (C-ORD-14);
 * - `abandoned`: the generation ended meanwhile (C-ORD-16).
 *
 * @category models
 * @since 0.1.0
 */
export type HandoffDisposition = "delivered" | "unclaimed" | "abandoned"

/**
 * The reservation identity (C-ORD-11): (requestId, messageId, senderId, generation).
 *
 * @category keys
 * @since 0.1.0
 */
export const reservationKey = (route: DetachRoute): string =>
  `${route.requestId}\u0000${route.messageId}\u0000${route.senderId}\u0000${route.runtimeGeneration}`

/**
 * Whether two routes are identical in every field (C-ORD-12, C-ORD-15).
 *
 * @category keys
 * @since 0.1.0
 */
export const sameRoute = (a: DetachRoute, b: DetachRoute): boolean =>
  a.requestId === b.requestId && a.messageId === b.messageId && a.childIntercomTarget === b.childIntercomTarget &&
  a.senderId === b.senderId && a.runtimeGeneration === b.runtimeGeneration

/**
 * The route fields of a request or acknowledgement, without its phase.
 *
 * @category keys
 * @since 0.1.0
 */
export const routeOf = (value: DetachRoute): DetachRoute => ({
  requestId: value.requestId,
  messageId: value.messageId,
  childIntercomTarget: value.childIntercomTarget,
  senderId: value.senderId,
  runtimeGeneration: value.runtimeGeneration
})
