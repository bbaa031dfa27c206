/**
 * AdmissionGate's permits (a class since the sixty-ninth stop, not a
 * closure per admitted connection): a released place passes to the first
 * waiter, and releasing the same permit again gives nothing more back.
 * `Permit.release` needs its permit as `this`: the type says so, and tsc
 * refuses a detached call (checked by `@ts-expect-error` below, compiled by
 * `npx tsc --noEmit -p .`, never run).
 */
import { assert, describe, it } from "@effect/vitest"
import { AdmissionGate, type Permit } from "../../src/broker/AdmissionGate.ts"

describe("AdmissionGate permits", () => {
  it("a release passes the place to the first waiter once; a second release of the same permit does nothing", () => {
    const gate = new AdmissionGate(1)
    const held = gate.tryEnter()
    assert.isDefined(held)
    assert.isUndefined(gate.tryEnter())
    const admitted: Array<Permit> = []
    gate.wait((permit) => admitted.push(permit))
    gate.wait((permit) => admitted.push(permit))
    held?.release()
    assert.strictEqual(admitted.length, 1)
    assert.strictEqual(gate.waiting, 1)
    held?.release()
    assert.strictEqual(admitted.length, 1)
    assert.strictEqual(gate.waiting, 1)
    admitted[0]?.release()
    assert.strictEqual(admitted.length, 2)
    admitted[1]?.release()
    admitted[1]?.release()
    // One place, free again once: a second free place would let two in.
    assert.isDefined(gate.tryEnter())
    assert.isUndefined(gate.tryEnter())
  })

  it("a detached release is a type error: the permit must be its `this`", () => {
    // Compiled, not run: the test is tsc's, and fails `npx tsc --noEmit -p .` when the call below type-checks.
    const detached = (permit: Permit): void => {
      const release = permit.release
      // @ts-expect-error -- The 'this' context of type 'void' is not assignable to method's 'this' of type 'Permit'.
      release()
    }
    assert.isFunction(detached)
  })
})
