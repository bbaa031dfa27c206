/**
 * Environment overrides: for every variable the ATOMIC_ name beats the legacy
 * PI_ name, blank values fall through, and the environment beats config.json.
 */
import { assert, describe, it } from "@effect/vitest"
import { type IntercomConfigError, IntercomEnvError, INTERCOM_ENV } from "../../src/config/index.ts"
import { resolve, withConfig } from "./support.ts"

const envError = (errors: ReadonlyArray<IntercomConfigError>): IntercomEnvError => {
  assert.strictEqual(errors.length, 1)
  const [error] = errors
  if (!(error instanceof IntercomEnvError)) return assert.fail(`expected an env error, got ${String(error)}`)
  return error
}

describe("string overrides: stable id, scope id, group", () => {
  const cases = [
    { name: "stableId", vars: INTERCOM_ENV.stableId, fileKey: "stableId", fallback: undefined },
    { name: "scopeId", vars: INTERCOM_ENV.scopeId, fileKey: undefined, fallback: undefined },
    { name: "group", vars: INTERCOM_ENV.group, fileKey: "group", fallback: "default" }
  ] as const

  for (const { fallback, fileKey, name, vars } of cases) {
    const [atomic, pi] = vars
    const read = (env: Record<string, string>, config: object = {}) => {
      const { settings } = withConfig(config, env)
      return settings[name]
    }

    it(`${name}: ${atomic} beats ${pi}`, () => {
      assert.strictEqual(read({ [atomic]: "from-atomic", [pi]: "from-pi" }), "from-atomic")
      assert.strictEqual(read({ [pi]: "from-pi" }), "from-pi")
    })

    it(`${name}: blank values fall through, values are trimmed`, () => {
      assert.strictEqual(read({ [atomic]: "  ", [pi]: " from-pi " }), "from-pi")
      assert.strictEqual(read({ [atomic]: "", [pi]: "\t" }), fallback)
    })

    if (fileKey !== undefined) {
      it(`${name}: the environment beats config.json, which beats the default`, () => {
        assert.strictEqual(read({ [pi]: "env" }, { [fileKey]: "file" }), "env")
        assert.strictEqual(read({ [atomic]: " " }, { [fileKey]: "file" }), "file")
        assert.strictEqual(read({}, {}), fallback)
      })
    }
  }

  it("scopeId has no config.json key", () => {
    const { settings, warnings } = withConfig({ scopeId: "s" })
    assert.isUndefined(settings.scopeId)
    assert.strictEqual(warnings.length, 1)
  })
})

describe("ask timeout", () => {
  const [ATOMIC, PI] = INTERCOM_ENV.askTimeoutMs

  it("ATOMIC_ beats PI_, the environment beats the file, the file beats the default", () => {
    assert.strictEqual(withConfig({ askTimeoutMs: 3 }, { [ATOMIC]: "1", [PI]: "2" }).settings.askTimeoutMs, 1)
    assert.strictEqual(withConfig({ askTimeoutMs: 3 }, { [PI]: "2" }).settings.askTimeoutMs, 2)
    assert.strictEqual(withConfig({ askTimeoutMs: 3 }, { [ATOMIC]: " ", [PI]: "" }).settings.askTimeoutMs, 3)
    assert.strictEqual(resolve().settings.askTimeoutMs, 600_000)
  })

  it("30 days, the broker's longest ask, is accepted", () => {
    assert.strictEqual(resolve({ env: { [PI]: "2592000000" } }).settings.askTimeoutMs, 2_592_000_000)
  })

  it("surrounding whitespace is allowed", () => {
    assert.strictEqual(resolve({ env: { [PI]: " 120000\n" } }).settings.askTimeoutMs, 120_000)
  })

  for (
    const bad of ["0", "-5", "1.5", "10s", "1e3", "0x10", "+5", "NaN", "Infinity", "99999999999999999999", "2592000001"]
  ) {
    it(`${JSON.stringify(bad)} is a startup error naming the variable`, () => {
      const { errors, settings } = resolve({ env: { [ATOMIC]: bad } })
      const error = envError(errors)
      assert.strictEqual(error.variable, ATOMIC)
      assert.strictEqual(error.value, bad)
      assert.include(error.message, ATOMIC)
      assert.include(error.message, "a whole number of milliseconds from 1 to 2592000000 (30 days)")
      // the value is not used; settings fall back as if it were unset
      assert.strictEqual(settings.askTimeoutMs, 600_000)
    })
  }

  it("an invalid ATOMIC_ value is an error even when PI_ is valid (it does not fall through)", () => {
    const error = envError(resolve({ env: { [ATOMIC]: "soon", [PI]: "1000" } }).errors)
    assert.strictEqual(error.variable, ATOMIC)
  })

  it("names the PI_ variable when that is the one in effect", () => {
    assert.strictEqual(envError(resolve({ env: { [PI]: "-1" } }).errors).variable, PI)
  })
})

describe("liveness", () => {
  const [ATOMIC_INTERVAL, PI_INTERVAL] = INTERCOM_ENV.livenessIntervalMs
  const [ATOMIC_TIMEOUT, PI_TIMEOUT] = INTERCOM_ENV.livenessTimeoutMs
  const liveness = (env: Record<string, string>) => resolve({ env })

  it("defaults: 30 s interval, 5 s timeout", () => {
    assert.deepStrictEqual(liveness({}).settings.liveness, { intervalMs: 30_000, timeoutMs: 5_000 })
  })

  it("ATOMIC_ beats PI_; blank falls through", () => {
    assert.deepStrictEqual(
      liveness({ [ATOMIC_INTERVAL]: "60000", [PI_INTERVAL]: "1000", [ATOMIC_TIMEOUT]: "7000", [PI_TIMEOUT]: "1" })
        .settings.liveness,
      { intervalMs: 60_000, timeoutMs: 7_000 }
    )
    assert.deepStrictEqual(
      liveness({ [ATOMIC_INTERVAL]: " ", [PI_INTERVAL]: "40000", [ATOMIC_TIMEOUT]: "", [PI_TIMEOUT]: "6000" })
        .settings.liveness,
      { intervalMs: 40_000, timeoutMs: 6_000 }
    )
  })

  it("the timeout is clamped to the interval, including the default timeout", () => {
    assert.deepStrictEqual(liveness({ [PI_INTERVAL]: "100", [PI_TIMEOUT]: "200" }).settings.liveness, {
      intervalMs: 100,
      timeoutMs: 100
    })
    assert.deepStrictEqual(liveness({ [PI_INTERVAL]: "1000" }).settings.liveness, { intervalMs: 1000, timeoutMs: 1000 })
    assert.deepStrictEqual(liveness({ [PI_TIMEOUT]: "60000" }).settings.liveness, {
      intervalMs: 30_000,
      timeoutMs: 30_000
    })
  })

  it("an invalid value is ignored with a warning naming the variable, and the next source applies", () => {
    const { errors, settings, warnings } = liveness({ [ATOMIC_INTERVAL]: "fast", [PI_INTERVAL]: "2000", [PI_TIMEOUT]: "0" })
    assert.deepStrictEqual(errors, [])
    assert.deepStrictEqual(settings.liveness, { intervalMs: 2000, timeoutMs: 2000 })
    assert.deepStrictEqual(warnings, [
      `Ignoring environment variable ${ATOMIC_INTERVAL}="fast": expected a positive integer (milliseconds).`,
      `Ignoring environment variable ${PI_TIMEOUT}="0": expected a positive integer (milliseconds).`
    ])
  })
})

describe("the environment never rescues a rejected file, and a rejected file never blocks the environment", () => {
  it("env overrides still apply on top of defaults when the file is rejected", () => {
    const { errors, settings } = withConfig({ confirmSend: "yes", group: "file-group" }, {
      ATOMIC_INTERCOM_GROUP: "env-group",
      PI_INTERCOM_ASK_TIMEOUT_MS: "5000"
    })
    assert.strictEqual(errors.length, 1)
    assert.strictEqual(settings.group, "env-group")
    assert.strictEqual(settings.askTimeoutMs, 5000)
    assert.isFalse(settings.confirmSend)
  })
})

describe("a group the broker would refuse, set in the environment", () => {
  it("is a startup error naming the variable, its value and what it must be", () => {
    for (const variable of INTERCOM_ENV.group) {
      for (const value of ["bad\u0001group", "x".repeat(257)]) {
        const error = envError(withConfig({}, { [variable]: value }).errors)
        assert.strictEqual(
          error.message,
          `Environment variable ${variable} must be a group name of at most 256 characters without control ` +
            `characters, but it is ${JSON.stringify(value)}. Fix it or unset it.`
        )
      }
    }
    assert.deepStrictEqual(withConfig({}, { [INTERCOM_ENV.group[0]]: "reviewers" }).errors, [])
  })
})
