/**
 * How peer health reads in `list`/`status` rows (C-HLT-1, C-HLT-2, C-HLT-7):
 * pure renderings, checked exactly.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import type { SessionInfo } from "../../src/protocol/frames.ts"
import {
  deliveryGuidance,
  formatAge,
  healthTags,
  peerBusyText,
  peerState,
  SELF_GUIDANCE
} from "../../src/session/health.ts"
import { renderSessionList } from "../../src/session/render.ts"
import { info } from "./support.ts"

const NOW = 10_000_000

describe("C-HLT-2 state", () => {
  it("acceptsAsks decides when published; otherwise the status prefix", () => {
    assert.strictEqual(peerState(info("a", { acceptsAsks: true, status: "thinking" })), "idle")
    assert.strictEqual(peerState(info("a", { acceptsAsks: false, status: "idle" })), "busy")
    assert.strictEqual(peerState(info("a", { status: "idle · reviewing" })), "idle")
    assert.strictEqual(peerState(info("a", { status: "thinking" })), "busy")
    assert.strictEqual(peerState(info("a", { status: "tool:bash · x" })), "busy")
    assert.strictEqual(peerState(info("a", { status: "away" })), "unknown")
    assert.strictEqual(peerState(info("a")), "unknown")
  })
})

describe("C-HLT-1 tags", () => {
  it("ages are whole seconds, minutes or hours", () => {
    assert.deepStrictEqual(
      [0, 999, 59_999, 60_000, 3_599_999, 3_600_000, 90_000_000, -5].map(formatAge),
      ["0s", "0s", "59s", "1m", "59m", "1h", "25h", "0s"]
    )
  })

  it("ages always read as a number and one unit", () => {
    fc.assert(fc.property(fc.integer({ min: -1e9, max: 1e12 }), (ms) => /^\d+[smh]$/.test(formatAge(ms))))
  })

  it("a published session shows every tag; an unknown one says unknown and none, without last_seen", () => {
    const published = info("a", {
      acceptsAsks: false,
      pendingAsks: 2,
      lastIntercomActivity: NOW - 125_000,
      lastSeen: NOW - 3_000
    })
    assert.deepStrictEqual(healthTags(published, NOW), [
      "state:busy",
      "accepts_asks:false",
      "pending_asks:2",
      "last_intercom_activity:2m ago",
      "last_seen:3s ago"
    ])
    assert.deepStrictEqual(healthTags(info("b", { status: "idle", lastIntercomActivity: 0 }), NOW), [
      "state:idle",
      "accepts_asks:unknown",
      "pending_asks:unknown",
      "last_intercom_activity:none"
    ])
  })
})

describe("C-HLT-7 rows and guidance", () => {
  const self: SessionInfo = info("aaaaaaaa-1", {
    name: "executor",
    cwd: "/p",
    status: "idle",
    acceptsAsks: true,
    pendingAsks: 0,
    lastIntercomActivity: 0,
    lastSeen: NOW
  })
  const research: SessionInfo = info("bbbbbbbb-2", {
    name: "research",
    cwd: "/p",
    status: "thinking",
    acceptsAsks: false,
    pendingAsks: 1,
    lastIntercomActivity: NOW - 120_000,
    lastSeen: NOW - 1_000
  })

  it("with health, each row has its tags and a guidance line; the self row points to pending/reply", () => {
    assert.strictEqual(
      renderSessionList(self, [self, research], [self, research], "default", NOW),
      "**Current session:**\n" +
        "• executor (aaaaaaaa) — /p (test-model) [self, idle, state:idle, accepts_asks:true, pending_asks:0, " +
        "last_intercom_activity:none, last_seen:0s ago]\n" +
        `  ${SELF_GUIDANCE}\n\n` +
        "**Other sessions:**\n" +
        "• research (bbbbbbbb) — /p (test-model) [same cwd, thinking, state:busy, accepts_asks:false, pending_asks:1, " +
        "last_intercom_activity:2m ago, last_seen:1s ago]\n" +
        `  ${deliveryGuidance("busy")}`
    )
    assert.include(SELF_GUIDANCE, "self target unavailable")
    assert.include(SELF_GUIDANCE, "pending/reply")
  })

  it("without health (a broker that did not grant health-v1) rows are the base rows", () => {
    assert.strictEqual(
      renderSessionList(self, [self, research]),
      "**Current session:**\n• executor (aaaaaaaa) — /p (test-model) [self, idle]\n\n" +
        "**Other sessions:**\n• research (bbbbbbbb) — /p (test-model) [same cwd, thinking]"
    )
  })

  it("the guidance suits the state: busy says a default ask does not wait and steer does", () => {
    assert.include(deliveryGuidance("busy"), "a default ask sends without waiting while it is busy")
    assert.include(deliveryGuidance("busy"), `delivery: "steer" waits`)
    assert.include(deliveryGuidance("idle"), "starts its turn now")
    assert.include(deliveryGuidance("unknown"), "health unknown")
    for (const state of ["idle", "busy", "unknown"] as const) assert.match(deliveryGuidance(state), /^↳ /)
  })

  it("C-HLT-5 the peer_busy text says the question was sent, not waited for, and not known to be consumed", () => {
    const text = peerBusyText("research")
    assert.include(text, "Question sent to research")
    assert.include(text, "did not wait")
    assert.include(text, "Delivery does not mean the question was consumed")
  })
})
