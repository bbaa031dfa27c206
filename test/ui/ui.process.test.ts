/**
 * `intercom ui` the way a person uses it: a broker with two sessions
 * (`intercom watch` processes), `intercom ui` as a process, and its page in a
 * real headless Chromium (Debian's `chromium`, driven by playwright-core).
 * The page shows both sessions, a send appears in the sequence chart, an
 * answered ask is joined with its reply, an ask left open past
 * `--stuck-after` is highlighted, and joined with its reply once answered; a
 * click on a column header sorts, `/` and text filter; a request without
 * the token, from a foreign Origin or for a rebound Host is refused; a
 * stopped broker is shown as such, with the last view kept.
 *
 * Needs `npm run build` (the CLI bundle) and chromium on PATH:
 * `scripts/test-tools.sh` installs it (`npm test` runs it first).
 * `UPDATE_UI_SCREENSHOT=1` saves the screenshot to docs/ui.png (the README's
 * picture); otherwise it goes to the test's temp dir.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { type Browser, chromium, type Page } from "playwright-core"
import { get, jsonOf, makeAgent, runCli, spawnCli, startWatch } from "../cli-client/support.ts"

/** Several processes and a browser on a machine that may be shared. */
const TIMEOUT = 120_000
/** How long the page may take to show something the broker already knows. */
const PAGE_WAIT = 30_000

const SCREENSHOT = fileURLToPath(new URL("../../docs/ui.png", import.meta.url))

/** The chromium executable on PATH, or a failure that says how to install it. */
const chromiumPath = Effect.suspend(() => {
  for (const dir of (process.env["PATH"] ?? "").split(path.delimiter)) {
    for (const name of ["chromium", "chromium-browser"]) {
      const candidate = path.join(dir, name)
      if (dir !== "" && fs.existsSync(candidate)) return Effect.succeed(candidate)
    }
  }
  return Effect.die(new Error("chromium is not installed: run `bash scripts/test-tools.sh` (npm test runs it first)"))
})

const browser = Effect.acquireRelease(
  Effect.flatMap(chromiumPath, (executablePath) =>
    Effect.promise(() => chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] }))),
  (browser: Browser) => Effect.promise(() => browser.close())
)

/** Waits until the page has an element matching `selector` that contains each of `texts`. */
const waitFor = (page: Page, selector: string, ...texts: ReadonlyArray<string>) =>
  Effect.promise(() =>
    texts
      .reduce((locator, text) => locator.filter({ hasText: text }), page.locator(selector))
      .first()
      .waitFor({ state: "attached", timeout: PAGE_WAIT })
  )

const count = (page: Page, selector: string) => Effect.promise(() => page.locator(selector).count())

/**
 * Waits until the session table's first column reads `expected`, in order (a
 * click or a key re-renders on the page's own schedule); fails with what it
 * reads after `PAGE_WAIT`.
 */
const sessionNames = (page: Page, expected: ReadonlyArray<string>) =>
  Effect.promise(async () => {
    // Playwright's own waits (the page's CSP forbids the string predicates of `waitForFunction`):
    // each expected name in its row, and no row after the last.
    const settled = Promise.all([
      ...expected.map((name, index) =>
        page
          .locator(`#sessions tbody tr:nth-child(${index + 1}) > td:first-child`)
          .filter({ hasText: new RegExp(`^${name}$`) })
          .waitFor({ state: "attached", timeout: PAGE_WAIT })
      ),
      page.locator(`#sessions tbody tr:nth-child(${expected.length + 1})`).waitFor({ state: "detached", timeout: PAGE_WAIT })
    ])
    // On a timeout the caller's assertion shows what the page has instead.
    await settled.catch(() => undefined)
    return page.locator("#sessions tbody tr td:first-child").allTextContents()
  })

/** A GET with the headers given (node:http, so Host and Origin are the test's); the status and body. */
const rawGet = (url: URL, headers: Readonly<Record<string, string>>) =>
  Effect.callback<{ readonly status: number; readonly body: string }>((resume) => {
    const req = http.get({ host: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, headers }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => (body += chunk))
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, body })))
    })
    req.on("error", (error) => resume(Effect.die(error)))
    return Effect.sync(() => req.destroy())
  })

describe("intercom ui in a browser", () => {
  it.live("shows both sessions, a send in the chart, an answered ask joined with its reply, a stuck ask highlighted then joined with its reply, sorting and filtering; refuses requests without the token or from another origin; says when the broker stops; Ctrl-C ends it with exit 0", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const alice = yield* startWatch(agent, "alice")
      const bob = yield* startWatch(agent, "bob")
      const ui = yield* spawnCli(agent, ["ui", "--stuck-after", "2s"])
      const [, printed = ""] = yield* ui.waitStdout(/^intercom ui: (http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43})$/m)
      const url = new URL(printed)

      const page = yield* Effect.flatMap(browser, (b) => Effect.promise(() => b.newPage({ viewport: { width: 1280, height: 860 } })))
      const response = yield* Effect.promise(() => page.goto(url.href))
      assert.strictEqual(response?.status(), 200)

      // Both sessions, and the link to the broker.
      yield* waitFor(page, "#sessions tbody tr", "alice")
      yield* waitFor(page, "#sessions tbody tr", "bob")
      yield* waitFor(page, "#connection.connected")

      // A send appears in the chart as an arrow with its message id.
      const sent = jsonOf(yield* runCli(agent, ["send", "--json", "--name", "alice", "bob", "hello from the browser test"]))
      const messageId = String(get(sent, "details", "messageId"))
      yield* waitFor(page, `#chart g.arrow.message[data-message-id="${messageId}"]`)
      const title = yield* Effect.promise(() =>
        page.locator(`#chart g.arrow[data-message-id="${messageId}"] title`).textContent()
      )
      assert.include(title, "alice → bob")

      // A refused send: in the refusals table with its code.
      yield* runCli(agent, ["send", "--name", "bob", "nobody-here", "anyone?"])
      yield* waitFor(page, "#refusals tbody tr", "E_TARGET_NOT_FOUND")

      // An ask answered at once: joined with its reply in the table and the chart.
      const quick = yield* spawnCli(agent, ["ask", "--name", "bob", "--timeout", "5m", "alice", "Which branch?"])
      const [, quickId = ""] = yield* alice.waitStdout(/\[ask\] bob \([^)]*\) · (\S+)\n {2}Which branch\?\n/)
      yield* alice.writeLine("main")
      assert.deepStrictEqual(yield* quick.waitExit(), { code: 0, signal: null }, quick.stderr())
      yield* waitFor(page, "#exchanges tbody tr", quickId.slice(0, 8), "answered")
      yield* waitFor(page, `#chart g.arrow.ask[data-message-id="${quickId}"]`, "answered in")
      yield* waitFor(page, "#chart g.arrow.reply", `to ${quickId.slice(0, 8)}`)

      // An ask left open past --stuck-after 2s is highlighted: the asks table, the totals, the chart.
      const asker = yield* spawnCli(agent, ["ask", "--name", "alice", "--timeout", "5m", "bob", "Are you stuck?"])
      const [, askId = ""] = yield* bob.waitStdout(/\[ask\] alice \([^)]*\) · (\S+)\n {2}Are you stuck\?\n/)
      yield* waitFor(page, "#asks tbody tr.stuck", "alice")
      yield* waitFor(page, `#chart g.arrow.ask.stuck[data-message-id="${askId}"]`)
      yield* waitFor(page, "#totals .total.stuck")
      yield* waitFor(page, "#exchanges tbody tr.stuck", askId.slice(0, 8), "stuck")
      yield* Effect.promise(() =>
        page.screenshot({
          path: process.env["UPDATE_UI_SCREENSHOT"] === "1" ? SCREENSHOT : path.join(agent.root, "ui.png"),
          fullPage: true
        })
      )

      // Sorting and filtering: a click on "name" sorts the sessions (again: reversed); `/` then text filters them.
      // The first click is pressed, held until the page renders a new view, then released: a click
      // that straddles a render must still sort (it was lost when a render rebuilt the header row).
      const nameHeader = page.locator("#sessions th", { hasText: "name" })
      const box = yield* Effect.promise(() => nameHeader.boundingBox())
      assert.isNotNull(box)
      yield* Effect.promise(() => page.evaluate(`document.querySelector("#sessions tbody").dataset.held = "yes"`))
      yield* Effect.promise(() => page.mouse.move(box.x + box.width / 2, box.y + box.height / 2))
      yield* Effect.promise(() => page.mouse.down())
      yield* Effect.promise(() => page.locator("#sessions tbody[data-held]").waitFor({ state: "detached", timeout: PAGE_WAIT }))
      yield* Effect.promise(() => page.mouse.up())
      yield* waitFor(page, "#sessions th", "name ▲")
      assert.deepStrictEqual(yield* sessionNames(page, ["alice", "bob"]), ["alice", "bob"])
      yield* Effect.promise(() => nameHeader.click())
      yield* waitFor(page, "#sessions th", "name ▼")
      assert.deepStrictEqual(yield* sessionNames(page, ["bob", "alice"]), ["bob", "alice"])
      yield* Effect.promise(() => page.keyboard.press("/"))
      yield* Effect.promise(() => page.keyboard.type("bob"))
      assert.deepStrictEqual(yield* sessionNames(page, ["bob"]), ["bob"])
      yield* Effect.promise(() => page.keyboard.press("Escape"))
      assert.deepStrictEqual(yield* sessionNames(page, ["bob", "alice"]), ["bob", "alice"])

      // Answered: the ask is joined with its reply, and is no longer stuck.
      yield* bob.writeLine("No: answering now.")
      assert.deepStrictEqual(yield* asker.waitExit(), { code: 0, signal: null }, asker.stderr())
      yield* waitFor(page, "#exchanges tbody tr", askId.slice(0, 8), "answered")
      yield* waitFor(page, "#chart g.arrow.reply", `to ${askId.slice(0, 8)}`)
      assert.strictEqual(yield* count(page, "#asks tbody tr.stuck"), 0)
      assert.strictEqual(yield* count(page, `#chart g.arrow.ask.stuck[data-message-id="${askId}"]`), 0)

      // Refused: no token (from the browser), a foreign Origin, a rebound Host.
      const withoutToken = yield* Effect.promise(() => page.goto(`${url.origin}/`))
      assert.strictEqual(withoutToken?.status(), 403)
      assert.include(yield* Effect.promise(() => page.content()), "missing or wrong token")
      const host = `127.0.0.1:${url.port}`
      const foreign = yield* rawGet(new URL(`/view.json${url.search}`, url), { host, origin: "http://evil.example" })
      assert.strictEqual(foreign.status, 403)
      const rebound = yield* rawGet(new URL(`/view.json${url.search}`, url), { host: `evil.example:${url.port}` })
      assert.strictEqual(rebound.status, 403)
      const allowed = yield* rawGet(new URL(`/view.json${url.search}`, url), { host })
      assert.strictEqual(allowed.status, 200)

      // The broker stops (its sessions left first, so none starts another): the page says so and keeps the last view.
      yield* Effect.promise(() => page.goto(url.href))
      yield* waitFor(page, "#connection.connected")
      yield* alice.endStdin
      yield* bob.endStdin
      assert.deepStrictEqual(yield* alice.waitExit(), { code: 0, signal: null })
      assert.deepStrictEqual(yield* bob.waitExit(), { code: 0, signal: null })
      const stopped = yield* runCli(agent, ["broker", "stop"])
      assert.strictEqual(stopped.code, 0, stopped.stderr)
      yield* waitFor(page, "#connection.lost", "No intercom broker answers", "Retrying")
      yield* waitFor(page, "#chart g.arrow.reply")

      // Ctrl-C with the page still open on its event stream: intercom ui ends, exit 0.
      yield* ui.kill("SIGINT")
      assert.deepStrictEqual(yield* ui.waitExit(), { code: 0, signal: null }, ui.stderr())
    }).pipe(Effect.scoped), TIMEOUT)

  it.live("a bad --stuck-after is a bad invocation (exit 2); a port in use ends the command with exit 1 naming it", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const bad = yield* runCli(agent, ["ui", "--stuck-after", "soon"])
      assert.strictEqual(bad.code, 2)
      assert.include(bad.stderr, `--stuck-after must be a positive duration such as 30s or 2m; got "soon"`)
      const first = yield* spawnCli(agent, ["ui"])
      const [, port = ""] = yield* first.waitStdout(/^intercom ui: http:\/\/127\.0\.0\.1:(\d+)\//m)
      const second = yield* runCli(agent, ["ui", "--port", port])
      assert.strictEqual(second.code, 1)
      assert.include(second.stderr, `Cannot serve the intercom ui on 127.0.0.1:${port}`)
      assert.include(second.stderr, "EADDRINUSE")
    }).pipe(Effect.scoped), TIMEOUT)
})
