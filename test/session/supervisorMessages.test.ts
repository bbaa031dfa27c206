/**
 * C-SUP-1, -2, -5, -6: the child's bridge metadata and deterministic target,
 * the `contact_supervisor` parameters with their exact refusals, and the
 * message the supervisor reads.
 */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import fc from "fast-check"
import {
  type BridgeEnvironment,
  childTarget,
  childTargetPart,
  CONTACT_SUPERVISOR_REASONS,
  type ContactSupervisorParams,
  type ContactSupervisorRequest,
  formatSupervisorMessage,
  parseSupervisorMessage,
  readChildBridge,
  renderInterview,
  SUBAGENT_BRIDGE_ENV,
  SUPERVISOR_MESSAGE_HEADINGS,
  supervisorMessage,
  validateContactSupervisor
} from "../../src/session/index.ts"

// ---------------------------------------------------------------------------
// C-SUP-1 bridge metadata
// ---------------------------------------------------------------------------

const atomicEnv = {
  ATOMIC_SUBAGENT_ORCHESTRATOR_TARGET: "planner",
  ATOMIC_SUBAGENT_RUN_ID: "78f659a3",
  ATOMIC_SUBAGENT_CHILD_AGENT: "worker",
  ATOMIC_SUBAGENT_CHILD_INDEX: "0"
}

const legacyEnv = {
  PI_SUBAGENT_ORCHESTRATOR_TARGET: "old-planner",
  PI_SUBAGENT_RUN_ID: "run-1",
  PI_SUBAGENT_CHILD_AGENT: "scout",
  PI_SUBAGENT_CHILD_INDEX: "2"
}

describe("C-SUP-1 bridge metadata", () => {
  it("the four Atomic variables, trimmed; no session name or grant unless set", () => {
    assert.deepStrictEqual(readChildBridge({ ...atomicEnv, ATOMIC_SUBAGENT_RUN_ID: " 78f659a3 " }), {
      supervisorTarget: "planner",
      runId: "78f659a3",
      agent: "worker",
      index: 0,
      sessionName: undefined,
      grant: undefined
    })
  })

  it("legacy PI_SUBAGENT_* variables, field by field, when the Atomic one is unset or blank", () => {
    assert.deepStrictEqual(readChildBridge(legacyEnv), {
      supervisorTarget: "old-planner",
      runId: "run-1",
      agent: "scout",
      index: 2,
      sessionName: undefined,
      grant: undefined
    })
    assert.deepStrictEqual(readChildBridge({ ...legacyEnv, ...atomicEnv, ATOMIC_SUBAGENT_CHILD_AGENT: "  " })?.agent, "scout")
    assert.deepStrictEqual(readChildBridge({ ...legacyEnv, ...atomicEnv })?.agent, "worker")
  })

  it("the child's session name and the supervisor grant (both halves, Atomic names only)", () => {
    const grant = { ATOMIC_SUBAGENT_SUPERVISOR_CAPABILITY: "nonce.mac", ATOMIC_SUBAGENT_SUPERVISOR_SESSION_ID: "sup-1" }
    const bridge = readChildBridge({ ...atomicEnv, ...grant, PI_SUBAGENT_INTERCOM_SESSION_NAME: "subagent-worker-78f659a3-1" })
    assert.strictEqual(bridge?.sessionName, "subagent-worker-78f659a3-1")
    assert.deepStrictEqual(bridge?.grant, { capability: "nonce.mac", supervisorSessionId: "sup-1" })
    assert.strictEqual(readChildBridge({ ...atomicEnv, ATOMIC_SUBAGENT_SUPERVISOR_CAPABILITY: "nonce.mac" })?.grant, undefined)
    assert.strictEqual(
      readChildBridge({ ...atomicEnv, ATOMIC_SUBAGENT_SUPERVISOR_CAPABILITY: "", PI_SUBAGENT_SUPERVISOR_CAPABILITY: "old", ATOMIC_SUBAGENT_SUPERVISOR_SESSION_ID: "sup-1" })?.grant,
      undefined
    )
  })

  it("any required field missing, blank or (index) not a non-negative decimal integer: no bridge", () => {
    assert.strictEqual(readChildBridge({}), undefined)
    for (const key of Object.keys(atomicEnv)) {
      assert.strictEqual(readChildBridge({ ...atomicEnv, [key]: undefined }), undefined, key)
      assert.strictEqual(readChildBridge({ ...atomicEnv, [key]: " " }), undefined, key)
    }
    for (const index of ["-1", "1.5", "1e3", "0x1", "one", "9007199254740993"]) {
      assert.strictEqual(readChildBridge({ ...atomicEnv, ATOMIC_SUBAGENT_CHILD_INDEX: index }), undefined, index)
    }
    assert.strictEqual(readChildBridge({ ...atomicEnv, ATOMIC_SUBAGENT_CHILD_INDEX: "007" })?.index, 7)
  })

  it("property: complete exactly when every required field resolves; each field is the Atomic value, else the legacy one", () => {
    const value = fc.option(fc.oneof(fc.string({ maxLength: 6 }), fc.nat().map(String), fc.constant("  ")), { nil: undefined })
    const required = ["supervisorTarget", "runId", "agent", "index"] as const
    const pick = (env: BridgeEnvironment, names: ReadonlyArray<string>) =>
      names.map((name) => env[name]?.trim()).find((text) => text !== undefined && text !== "")
    const environment = fc.tuple(...required.map(() => fc.tuple(value, value))).map((pairs) => {
      const env: Record<string, string | undefined> = {}
      required.forEach((field, position) => {
        const [atomic, legacy] = SUBAGENT_BRIDGE_ENV[field]
        env[atomic] = pairs[position]?.[0]
        env[legacy] = pairs[position]?.[1]
      })
      return env
    })
    fc.assert(fc.property(environment, (env) => {
      const [target, runId, agent, index] = required.map((field) => pick(env, SUBAGENT_BRIDGE_ENV[field]))
      const complete = target !== undefined && runId !== undefined && agent !== undefined && index !== undefined &&
        /^\d+$/.test(index)
      const bridge = readChildBridge(env)
      assert.strictEqual(bridge !== undefined, complete)
      if (bridge !== undefined) {
        assert.deepStrictEqual([bridge.supervisorTarget, bridge.runId, bridge.agent, bridge.index], [target, runId, agent, Number(index)])
      }
    }))
  })
})

// ---------------------------------------------------------------------------
// C-SUP-6 the deterministic child target
// ---------------------------------------------------------------------------

const TARGET_PART = /^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?$/

describe("C-SUP-6 child target", () => {
  it("subagent-<agent>-<runId>-<index+1>, each part lower-cased and sanitized", () => {
    assert.strictEqual(childTarget({ agent: "worker", runId: "78f659a3", index: 0 }), "subagent-worker-78f659a3-1")
    assert.strictEqual(childTarget({ agent: "Code Reviewer", runId: "Run#42", index: 2 }), "subagent-code-reviewer-run-42-3")
    assert.strictEqual(childTarget({ agent: "!!!", runId: "", index: 9 }), "subagent-agent-agent-10")
  })

  it("runs of other characters become one -; - and _ are kept; leading and trailing - trimmed; empty becomes agent", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["a  b//c", "a-b-c"],
      ["a--b", "a--b"],
      ["a - b", "a---b"],
      ["__init__", "__init__"],
      ["--x--", "x"],
      ["  Ünïcödé  ", "n-c-d"],
      ["日本", "agent"],
      ["-", "agent"],
      ["", "agent"]
    ]
    for (const [value, part] of cases) assert.strictEqual(childTargetPart(value), part, value)
  })

  it("property: every part is non-empty [a-z0-9_-] without a leading or trailing -, and sanitizing it again changes nothing", () => {
    fc.assert(fc.property(fc.oneof(fc.string(), fc.string({ unit: "binary" }), fc.string({ unit: fc.constantFrom("a", "Z", "-", "_", " ", "9", "é") })), (text) => {
      const part = childTargetPart(text)
      assert.match(part, TARGET_PART)
      assert.strictEqual(childTargetPart(part), part)
    }))
  })

  it("property: a part already in the target alphabet is kept; ASCII case does not matter", () => {
    fc.assert(fc.property(fc.stringMatching(TARGET_PART), (part) => {
      assert.strictEqual(childTargetPart(part), part)
      assert.strictEqual(childTargetPart(part.toUpperCase()), part)
    }))
  })

  it("property: the target is stable and in [a-z0-9_-]+, ending in the 1-based index", () => {
    fc.assert(fc.property(fc.string(), fc.string(), fc.nat(), (agent, runId, index) => {
      const target = childTarget({ agent, runId, index })
      assert.strictEqual(target, childTarget({ agent, runId, index }))
      assert.match(target, /^[a-z0-9_-]+$/)
      assert.strictEqual(target, `subagent-${childTargetPart(agent)}-${childTargetPart(runId)}-${index + 1}`)
    }))
  })
})

// ---------------------------------------------------------------------------
// C-SUP-2 parameters
// ---------------------------------------------------------------------------

const interview = { questions: [{ id: "api", type: "single", question: "Which API?", options: ["Stable", "Beta"] }] }

const refusal = (params: ContactSupervisorParams): string => {
  const result = validateContactSupervisor(params)
  return Result.isFailure(result) ? result.failure.message : "valid"
}

const request = (params: ContactSupervisorParams): ContactSupervisorRequest => {
  const result = validateContactSupervisor(params)
  return Result.isSuccess(result) ? result.success : assert.fail(result.failure.message)
}

describe("C-SUP-2 contact_supervisor parameters", () => {
  const invalidReason = "Invalid reason. Use 'need_decision', 'interview_request', or 'progress_update'."

  it("the reason must be one of the three", () => {
    assert.strictEqual(refusal({ reason: "complete", message: "done" }), invalidReason)
    assert.strictEqual(refusal({ message: "done" }), invalidReason)
    assert.strictEqual(refusal({ reason: " need_decision", message: "x" }), invalidReason)
    assert.strictEqual(refusal({ reason: "NEED_DECISION", message: "x" }), invalidReason)
  })

  it("need_decision and progress_update need a message that is not blank; it is kept as written", () => {
    assert.strictEqual(refusal({ reason: "need_decision" }), "Missing 'message' parameter for reason 'need_decision'.")
    assert.strictEqual(refusal({ reason: "progress_update", message: " \n" }), "Missing 'message' parameter for reason 'progress_update'.")
    assert.strictEqual(refusal({ reason: "progress_update", message: 5 }), "Missing 'message' parameter for reason 'progress_update'.")
    assert.deepStrictEqual(request({ reason: "need_decision", message: " Which API? ", interview }), {
      reason: "need_decision",
      message: " Which API? "
    })
  })

  it("interview_request needs a valid interview; its string message is the note", () => {
    assert.strictEqual(
      refusal({ reason: "interview_request", message: "Please answer." }),
      "Invalid interview request: interview must be an object with a questions array"
    )
    assert.strictEqual(
      refusal({ reason: "interview_request", interview: { questions: [{ id: "a", type: "text", question: "?", options: ["x"] }] } }),
      "Invalid interview request: interview.questions[0].options is only valid for single and multi questions"
    )
    const valid = request({ reason: "interview_request", message: "Please answer.", interview })
    assert.deepStrictEqual(valid, {
      reason: "interview_request",
      interview: { title: undefined, description: undefined, questions: [{ id: "api", type: "single", question: "Which API?", context: undefined, options: ["Stable", "Beta"] }] },
      note: "Please answer."
    })
    assert.strictEqual(request({ reason: "interview_request", interview }).reason, "interview_request")
  })

  it("property: any parameters give a request or one of the three refusals, never a throw", () => {
    const params = fc.record({
      reason: fc.oneof(fc.constantFrom(...CONTACT_SUPERVISOR_REASONS), fc.anything()),
      message: fc.oneof(fc.string(), fc.anything()),
      interview: fc.oneof(fc.constant(interview), fc.anything())
    }, { requiredKeys: [] })
    fc.assert(fc.property(params, (input) => {
      const result = validateContactSupervisor(input)
      if (Result.isFailure(result)) {
        assert.match(result.failure.message, /^(Invalid reason\. |Missing 'message' parameter for reason '|Invalid interview request: )/)
      } else {
        assert.strictEqual(result.success.reason, input.reason)
      }
    }))
  })
})

// ---------------------------------------------------------------------------
// C-SUP-5 the supervisor's message
// ---------------------------------------------------------------------------

describe("C-SUP-5 the supervisor's message", () => {
  const worker = { runId: "78f659a3", agent: "worker", index: 0 }

  it("the seed's decision: heading, run, agent, 0-based child index, a blank line, the message", () => {
    assert.strictEqual(
      supervisorMessage(request({ reason: "need_decision", message: "Which API should I use?" }), worker),
      "Subagent needs a supervisor decision.\nRun: 78f659a3\nAgent: worker\nChild index: 0\n\nWhich API should I use?"
    )
  })

  it("a progress update, with the child's intercom target", () => {
    assert.strictEqual(
      supervisorMessage(
        request({ reason: "progress_update", message: "Found it.\nIn the retry wrapper." }),
        { ...worker, index: 3, sessionName: "subagent-worker-78f659a3-4" }
      ),
      "Subagent progress update.\nRun: 78f659a3\nAgent: worker\nChild index: 3\nChild intercom target: subagent-worker-78f659a3-4\n\nFound it.\nIn the retry wrapper."
    )
  })

  it("an interview: the interview heading over the rendered interview with the note (C-INT-4)", () => {
    const valid = request({ reason: "interview_request", message: "Before I migrate.", interview })
    assert.strictEqual(valid.reason, "interview_request")
    if (valid.reason !== "interview_request") return
    assert.strictEqual(
      supervisorMessage(valid, worker),
      `Subagent requests a structured supervisor interview.\nRun: 78f659a3\nAgent: worker\nChild index: 0\n\n${renderInterview(valid.interview, "Before I migrate.")}`
    )
    assert.isTrue(supervisorMessage(valid, worker).includes("\n\nChild note: Before I migrate.\n\nQuestions:\n1. [api] (single) Which API?\n"))
  })

  it("property: the heading, three or four metadata lines, a blank line, then the body unchanged", () => {
    fc.assert(fc.property(
      fc.constantFrom(...CONTACT_SUPERVISOR_REASONS),
      fc.string(),
      fc.string(),
      fc.nat(),
      fc.option(fc.string(), { nil: undefined }),
      fc.string(),
      (reason, runId, agent, index, sessionName, body) => {
        const text = formatSupervisorMessage(reason, { runId, agent, index, sessionName }, body)
        const header = [`Run: ${runId}`, `Agent: ${agent}`, `Child index: ${index}`]
        if (sessionName !== undefined) header.push(`Child intercom target: ${sessionName}`)
        assert.strictEqual(text, `${SUPERVISOR_MESSAGE_HEADINGS[reason]}\n${header.join("\n")}\n\n${body}`)
      }
    ))
  })
})

describe("parseSupervisorMessage (C-SUP-5, read back for the supervisor's pending rows)", () => {
  const line = fc.string().filter((text) => !text.includes("\n"))

  it("reads back every field of formatSupervisorMessage", () => {
    fc.assert(fc.property(
      fc.constantFrom(...CONTACT_SUPERVISOR_REASONS),
      line,
      line,
      fc.nat(),
      fc.option(line, { nil: undefined }),
      fc.string(),
      (reason, runId, agent, index, sessionName, body) => {
        assert.deepStrictEqual(
          parseSupervisorMessage(formatSupervisorMessage(reason, { runId, agent, index, sessionName }, body)),
          { reason, runId, agent, index, sessionName, body }
        )
      }
    ))
  })

  it("other texts are not supervisor messages", () => {
    assert.isUndefined(parseSupervisorMessage("Which API should I use?"))
    assert.isUndefined(parseSupervisorMessage("Subagent needs a supervisor decision.\nRun: r\nAgent: a\nChild index: x\n\nbody"))
    assert.isUndefined(parseSupervisorMessage("Subagent needs a supervisor decision.\nRun: r\nAgent: a\nChild index: 0\nbody"))
  })
})
