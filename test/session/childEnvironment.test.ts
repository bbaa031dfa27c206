/**
 * The launcher's side of the bridge (C-SUP-7, C-SUP-16): the environment a
 * delegated child is started with carries its metadata and its own grant,
 * and never a capability inherited from further up.
 */
import { assert, describe, it } from "@effect/vitest"
import { childEnvironment, childSessionName, readChildBridge } from "../../src/session/supervisorBridge.ts"

const launch = { runId: "Run 7", agent: "Code Reviewer", index: 2, supervisorTarget: "sup-1" }
const grant = { capability: "nonce.mac", supervisorSessionId: "sup-1" }

describe("childEnvironment", () => {
  it("carries the child's metadata and grant, read back by readChildBridge", () => {
    const env = childEnvironment({ PATH: "/bin", HOME: "/home/me" }, launch, grant)
    assert.strictEqual(env["PATH"], "/bin")
    assert.strictEqual(childSessionName(launch), "subagent-code-reviewer-run-7-3")
    assert.deepStrictEqual(readChildBridge(env), {
      supervisorTarget: "sup-1",
      runId: "Run 7",
      agent: "Code Reviewer",
      index: 2,
      sessionName: "subagent-code-reviewer-run-7-3",
      grant
    })
  })

  it("a grandchild started without a fresh grant inherits none: every bridge and grant variable of the parent is cleared", () => {
    const parent = childEnvironment({ PI_SUBAGENT_RUN_ID: "old", PI_SUBAGENT_ORCHESTRATOR_TARGET: "old-sup" }, launch, grant)
    const grandchild = childEnvironment(parent, { runId: "r2", agent: "helper", index: 0, supervisorTarget: "child-1" }, undefined)
    assert.isUndefined(grandchild["ATOMIC_SUBAGENT_SUPERVISOR_CAPABILITY"])
    assert.isUndefined(grandchild["ATOMIC_SUBAGENT_SUPERVISOR_SESSION_ID"])
    assert.isUndefined(grandchild["PI_SUBAGENT_RUN_ID"])
    assert.deepStrictEqual(readChildBridge(grandchild)?.grant, undefined)
    assert.strictEqual(readChildBridge(grandchild)?.supervisorTarget, "child-1")
  })

  it("a group, when given, replaces the inherited one (both names); without one the inherited group stays", () => {
    const base = { ATOMIC_INTERCOM_GROUP: "parent", PI_INTERCOM_GROUP: "legacy" }
    const grouped = childEnvironment(base, { ...launch, group: "run-7" }, grant)
    assert.strictEqual(grouped["ATOMIC_INTERCOM_GROUP"], "run-7")
    assert.isUndefined(grouped["PI_INTERCOM_GROUP"])
    assert.strictEqual(childEnvironment(base, launch, grant)["ATOMIC_INTERCOM_GROUP"], "parent")
    assert.strictEqual(childSessionName({ ...launch, sessionName: " reviewer " }), "reviewer")
  })
})
