/**
 * `npm run bench:pi` — what the pi extension costs (docs/performance.md, "The
 * pi extension"). Not a timed test; numbers vary with the machine.
 *
 *   node bench/pi.ts [--reps N]
 *
 * 1. Extension load: in a cold process each time (`bench/pi-load.ts`), pi's
 *    own resource loader (jiti, as `pi -e` uses it) loads no extension, an
 *    empty one, or `dist/pi/extension.js` and runs the factory; the medians'
 *    differences are what the extension adds to pi's startup. (Whole `pi`
 *    runs were too noisy on a shared 2-core machine to resolve 30 ms.)
 * 2. First action: a fresh pi SDK session (the extension loaded, no broker
 *    running, a fresh agent dir each rep) whose scripted model calls
 *    `intercom status`; the time from the tool's start to its end covers
 *    loading the runtime, spawning the broker, registering and listing.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { eachArg, helpOrUnknown } from "./args.ts"
import { median } from "./stats.ts"

const ROOT = fileURLToPath(new URL("../", import.meta.url))
const EXTENSION = path.join(ROOT, "dist", "pi", "extension.js")
const INTERCOM = path.join(ROOT, "dist", "bin", "intercom.mjs")
const usage = "usage: node bench/pi.ts [--reps N]   (N cold loads of each variant, default 15; first actions: max(3, N/2))"

/** `--reps`, or an exit: 2 with the usage for a bad flag, 0 after printing it for `--help`. */
const parseReps = (argv: ReadonlyArray<string>): number => {
  let reps = 15
  try {
    eachArg(argv, usage, (arg) => {
      if (arg.key === "--reps") reps = arg.int(1, 1000)
      else helpOrUnknown(arg, usage)
    })
  } catch (e) {
    process.stderr.write(`bench:pi: ${e instanceof Error ? e.message : String(e)}\n`)
    process.exit(2)
  }
  return reps
}
const REPS = parseReps(process.argv.slice(2))

// pi's modules take seconds to load: only once the flags are known to be good.
const { fauxAssistantMessage, fauxProvider, fauxText, fauxToolCall } = await import("@earendil-works/pi-ai")
const { createAgentSession, DefaultResourceLoader, ModelRuntime, SessionManager, SettingsManager } = await import(
  "@earendil-works/pi-coding-agent"
)

/** Every dir this run made; removed at exit, also after a failure. */
const made = new Set<string>()
process.on("exit", () => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true })
})

const freshDir = (): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "eipibench-"))
  made.add(dir)
  return dir
}

/** An extension that does nothing: what pi's loader costs for any extension. */
const EMPTY = path.join(freshDir(), "empty.js")
fs.writeFileSync(EMPTY, "export default function () {}\n")

/** One cold process: pi's loader loading `extensions` and running their factories, in ms. */
const load = (extensions: ReadonlyArray<string>): number => {
  const output = execFileSync(process.execPath, [path.join(ROOT, "bench", "pi-load.ts"), ...extensions], {
    encoding: "utf8",
    env: { ...process.env, PI_OFFLINE: "1" }
  })
  return Number(output.trim())
}

const firstAction = async (): Promise<number> => {
  const dir = freshDir()
  process.env["PI_CODING_AGENT_DIR"] = dir
  const faux = fauxProvider()
  const modelRuntime = await ModelRuntime.create({ authPath: path.join(dir, "auth.json"), modelsPath: null, refreshOnCreate: false })
  modelRuntime.registerNativeProvider(faux.provider)
  const settingsManager = SettingsManager.inMemory()
  const resourceLoader = new DefaultResourceLoader({
    cwd: dir,
    agentDir: dir,
    settingsManager,
    additionalExtensionPaths: [EXTENSION],
    noSkills: true,
    noPromptTemplates: true,
    noThemes: true,
    noContextFiles: true
  })
  await resourceLoader.reload()
  const { session } = await createAgentSession({
    cwd: dir,
    agentDir: dir,
    model: faux.getModel(),
    thinkingLevel: "off",
    modelRuntime,
    resourceLoader,
    settingsManager,
    sessionManager: SessionManager.inMemory(dir),
    noTools: "builtin"
  })
  // "rpc": a long-lived session; the first use is the tool call, not session_start's wait.
  await session.bindExtensions({ mode: "rpc" })
  faux.setResponses([
    fauxAssistantMessage(fauxToolCall("intercom", { action: "status" }), { stopReason: "toolUse" }),
    fauxAssistantMessage(fauxText("ok"))
  ])
  let started = 0
  let ended = 0
  let text = ""
  session.subscribe((event) => {
    if (event.type === "tool_execution_start") started = performance.now()
    if (event.type === "tool_execution_end") {
      ended = performance.now()
      text = JSON.stringify(event.result)
    }
  })
  await session.prompt("status")
  await session.reload() // session_shutdown: the generation closes; the reload's new one joins at once
  // No session_shutdown (pi's SDK only makes the extension's context stale): the reload's generation
  // sees that within half a second and closes itself, so the process ends once it has printed.
  session.dispose()
  try {
    execFileSync(process.execPath, [INTERCOM, "broker", "stop", "--dir", dir], { stdio: "ignore" })
  } catch {
    // the broker had already gone
  }
  fs.rmSync(dir, { recursive: true, force: true })
  if (!text.includes("Connected: Yes")) throw new Error(`first action failed: ${text}`)
  return ended - started
}

const none: Array<number> = []
const empty: Array<number> = []
const ours: Array<number> = []
const variants = [() => none.push(load([])), () => empty.push(load([EMPTY])), () => ours.push(load([EXTENSION]))]
for (let rep = 0; rep < REPS; rep++) {
  // Rotate the order so drift in machine load hits every variant alike.
  for (let i = 0; i < variants.length; i++) variants[(rep + i) % variants.length]?.()
}
const first: Array<number> = []
for (let rep = 0; rep < Math.max(3, Math.ceil(REPS / 2)); rep++) first.push(await firstAction())

const ms = (value: number): string => `${value.toFixed(0)} ms`
console.log(`extension loading (pi's loader, cold process), median of ${REPS}: no extension ${ms(median(none))}, ` +
  `an empty extension ${ms(median(empty))}, effect-intercom ${ms(median(ours))}: ` +
  `${ms(median(ours) - median(none))} over none, ${ms(median(ours) - median(empty))} over an empty one`)
console.log(`first intercom action, fresh session, no broker running, median of ${first.length}: ${ms(median(first))} ` +
  `(min ${ms(Math.min(...first))}, max ${ms(Math.max(...first))})`)
