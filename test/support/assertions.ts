/** Assertions on broker answers (P41, P45) and connection outcomes. */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { DeliveryCode, isRetryable } from "../../src/protocol/delivery.ts"
import type { Ack } from "./broker.ts"
import type { StillOpen, UnexpectedFrame, WireClient, WireError, WireProtocolViolation } from "./wire.ts"

const show = (value: unknown) => JSON.stringify(value)

/** A full `delivered` ack (P41). */
export const assertDelivered = (ack: Ack, delivery: "socket_delivered" | "queued" = "socket_delivered") => {
  assert.strictEqual(ack.type, "delivered", `expected delivered, got ${show(ack)}`)
  if (ack.type !== "delivered") return
  assert.strictEqual(ack.delivery, delivery, show(ack))
  assert.strictEqual(ack.retryable, false, show(ack))
  assert.strictEqual(ack.outcomeKnown, true, show(ack))
}

/** A full `delivery_failed` (P45): code, exact reason, `delivery:"failed"`, retryable only for a rebound (and ours: a store that could not save). */
/** The codes the broker marks `retryable` (protocol/delivery.ts `isRetryable`). */
const RETRYABLE: ReadonlySet<string> = new Set(Object.values(DeliveryCode).filter(isRetryable))

export const assertFailed = (ack: Ack, code: string, reason?: string) => {
  assert.strictEqual(ack.type, "delivery_failed", `expected delivery_failed ${code}, got ${show(ack)}`)
  if (ack.type !== "delivery_failed") return
  assert.strictEqual(ack.code, code, show(ack))
  if (reason !== undefined) assert.strictEqual(ack.reason, reason, show(ack))
  assert.strictEqual(ack.delivery, "failed", show(ack))
  assert.strictEqual(ack.retryable, RETRYABLE.has(code), show(ack))
  assert.strictEqual(ack.outcomeKnown, true, show(ack))
}

/**
 * The broker closed the connection and sent nothing on it since the last
 * `drain` (P03). Exact: everything the broker wrote before closing arrives
 * before the close is seen.
 */
export const closedWithoutReply = (
  client: WireClient
): Effect.Effect<void, StillOpen | UnexpectedFrame | WireProtocolViolation> =>
  Effect.andThen(client.waitClosed(), client.expectNothing())

/**
 * Still connected after the broker handled everything sent so far: a round
 * trip on the connection is answered, and nothing closed it meanwhile.
 */
export const stillOpen = (client: WireClient): Effect.Effect<void, WireError> =>
  Effect.andThen(
    client.roundTrip,
    Effect.sync(() => assert.isFalse(client.isClosed(), `${client.label} was closed`))
  )
