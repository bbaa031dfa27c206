/**
 * `/intercom` in the TUI (src/pi/command.ts): pi's harnesses cannot drive the
 * TUI (docs/pi.md), so the overlay's logic runs here against scripted dialogs
 * — what it lists, what it sends to whom, and when it sends nothing. The
 * non-TUI path (a notification) is covered in a real `pi --mode rpc`
 * (rpc.process.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { type IntercomCommandContext, openIntercom } from "../../src/pi/command.ts"
import type { IntercomToolParams, ToolResult } from "../../src/session/IntercomSession.ts"

const listing: ToolResult = {
  text: "**Current session:** …",
  isError: false,
  details: {
    sessionId: "self-id",
    sessions: [
      { id: "self-id", name: "me", status: "idle", cwd: "/work" },
      { id: "peer-1", name: "reviewer", status: "thinking…", cwd: "/work/a" },
      { id: "peer-2", name: "", status: "idle", cwd: "/work/b" }
    ]
  }
}

/** A scripted TUI: `pick` answers the selector, `write` the editor; everything shown is recorded. */
const scripted = (pick: (options: ReadonlyArray<string>) => string | undefined, write: string | undefined) => {
  const shown: Array<{ readonly kind: string; readonly text: string }> = []
  const calls: Array<IntercomToolParams> = []
  const ctx: IntercomCommandContext = {
    mode: "tui",
    ui: {
      select: async (title, options) => {
        shown.push({ kind: "select", text: `${title}: ${options.join(" | ")}` })
        return pick(options)
      },
      editor: async (title) => {
        shown.push({ kind: "editor", text: title })
        return write
      },
      notify: (message, type) => {
        shown.push({ kind: `notify:${type ?? "info"}`, text: message })
      }
    }
  }
  const run = async (params: IntercomToolParams): Promise<ToolResult> => {
    calls.push(params)
    return params.action === "list" ? listing : { text: "Message sent to reviewer", isError: false, details: {} }
  }
  return { ctx, run, shown, calls }
}

describe("/intercom in the TUI", () => {
  it("shows a peer's name, status and cwd without their control characters", async () => {
    const tui = scripted(() => undefined, undefined)
    const evil: ToolResult = {
      ...listing,
      details: { sessionId: "self-id", sessions: [{ id: "peer-9", name: "x\u001b[2Jy", status: "ok\u0007", cwd: "/w\nfake row" }] }
    }
    await openIntercom(tui.ctx, "", async (params) => params.action === "list" ? evil : tui.run(params))
    assert.deepStrictEqual(tui.shown[0], { kind: "select", text: "Intercom — send to: x\uFFFD[2Jy — ok\uFFFD — /w\uFFFDfake row" })
  })

  it("a notification of a listing shows its control characters as escapes", async () => {
    const tui = scripted(() => undefined, undefined)
    const evil: ToolResult = { text: "**Sessions:**\n- x\u001b[2Jy", isError: false, details: { sessions: [] } }
    await openIntercom(tui.ctx, "", async () => evil)
    assert.deepStrictEqual(tui.shown[0], { kind: "notify:info", text: "**Sessions:**\n- x\\u001b[2Jy" })
  })

  it("lists the other sessions with their status, and sends the composed message to the one picked, by id", async () => {
    const tui = scripted((options) => options[0], "Please look at the retry logic")
    await openIntercom(tui.ctx, "", tui.run)
    assert.deepStrictEqual(tui.shown[0], {
      kind: "select",
      text: "Intercom — send to: reviewer — thinking… — /work/a | peer-2 — idle — /work/b"
    })
    assert.deepStrictEqual(tui.shown[1], { kind: "editor", text: "Message to reviewer" })
    assert.deepStrictEqual(tui.calls, [
      { action: "list", scope: "project" },
      { action: "send", to: "peer-1", message: "Please look at the retry logic" }
    ])
    assert.deepStrictEqual(tui.shown[2], { kind: "notify:info", text: "Message sent to reviewer" })
  })

  it("/intercom all lists every session; an unnamed one is labelled and addressed by its id", async () => {
    const tui = scripted((options) => options[1], "hello")
    await openIntercom(tui.ctx, "all", tui.run)
    assert.deepStrictEqual(tui.calls, [
      { action: "list", scope: "all" },
      { action: "send", to: "peer-2", message: "hello" }
    ])
    assert.deepStrictEqual(tui.shown[1], { kind: "editor", text: "Message to peer-2" })
  })

  it("two sessions with the same name, status and cwd get distinct labels, and picking the second sends to its id", async () => {
    const twins: ToolResult = {
      ...listing,
      details: {
        sessionId: "self-id",
        sessions: [
          { id: "self-id", name: "me", status: "idle", cwd: "/work" },
          { id: "019a0000-0000-7000-8000-00000000aaaa", name: "reviewer", status: "idle", cwd: "/work" },
          { id: "019a0000-0000-7000-8000-00000000bbbb", name: "reviewer", status: "idle", cwd: "/work" }
        ]
      }
    }
    const tui = scripted((options) => options[1], "hello")
    const run = async (params: IntercomToolParams): Promise<ToolResult> => {
      tui.calls.push(params)
      return params.action === "list" ? twins : { text: "Message sent to reviewer", isError: false, details: {} }
    }
    await openIntercom(tui.ctx, "", run)
    assert.deepStrictEqual(tui.calls, [
      { action: "list", scope: "project" },
      { action: "send", to: "019a0000-0000-7000-8000-00000000bbbb", message: "hello" }
    ])
    assert.deepStrictEqual(tui.shown[0], {
      kind: "select",
      text: "Intercom — send to: reviewer — idle — /work — 0000aaaa | reviewer — idle — /work — 0000bbbb"
    })
    assert.deepStrictEqual(tui.shown[1], { kind: "editor", text: "Message to reviewer" })
  })

  it("nothing is sent when the picker is dismissed, or the message is left empty", async () => {
    const dismissed = scripted(() => undefined, "never used")
    await openIntercom(dismissed.ctx, "", dismissed.run)
    assert.deepStrictEqual(dismissed.calls, [{ action: "list", scope: "project" }])
    assert.deepStrictEqual(dismissed.shown.map((entry) => entry.kind), ["select"])

    const blank = scripted((options) => options[0], "   ")
    await openIntercom(blank.ctx, "", blank.run)
    assert.deepStrictEqual(blank.calls, [{ action: "list", scope: "project" }])
    assert.deepStrictEqual(blank.shown.map((entry) => entry.kind), ["select", "editor"])
  })

  it("with nobody else connected, the listing is shown as a notification and no picker opens", async () => {
    const tui = scripted(() => "unused", "unused")
    const alone: ToolResult = { ...listing, details: { sessionId: "self-id", sessions: [{ id: "self-id", name: "me" }] } }
    const run = async (params: IntercomToolParams): Promise<ToolResult> => {
      tui.calls.push(params)
      return alone
    }
    await openIntercom(tui.ctx, "", run)
    assert.deepStrictEqual(tui.shown, [{ kind: "notify:info", text: alone.text }])
    assert.deepStrictEqual(tui.calls, [{ action: "list", scope: "project" }])
  })

  it("a send that fails shows its error and opens the editor again with the typed message; sending again works", async () => {
    const typed = "A long, carefully written message about the retry logic"
    const shown: Array<{ readonly kind: string; readonly text: string }> = []
    const calls: Array<IntercomToolParams> = []
    const answers = [typed, `${typed}, again`]
    const ctx: IntercomCommandContext = {
      mode: "tui",
      ui: {
        select: async (_title, options) => options[0],
        editor: async (title, prefill) => {
          shown.push({ kind: "editor", text: `${title} [${prefill ?? ""}]` })
          return answers.shift()
        },
        notify: (message, type) => void shown.push({ kind: `notify:${type ?? "info"}`, text: message })
      }
    }
    const failed: ToolResult = { text: `Message to "reviewer" was not delivered: Session not found`, isError: true, details: {} }
    const run = async (params: IntercomToolParams): Promise<ToolResult> => {
      calls.push(params)
      if (params.action === "list") return listing
      return calls.length === 2 ? failed : { text: "Message sent to reviewer", isError: false, details: {} }
    }
    await openIntercom(ctx, "", run)
    assert.deepStrictEqual(shown, [
      { kind: "editor", text: "Message to reviewer []" },
      { kind: "notify:error", text: failed.text },
      { kind: "editor", text: `Not sent to reviewer (see the error above): edit and send again, or close to discard [${typed}]` },
      { kind: "notify:info", text: "Message sent to reviewer" }
    ])
    assert.deepStrictEqual(calls.slice(1).map((call) => call.message), [typed, `${typed}, again`])
  })

  it("a send whose delivery is unknown reopens the editor saying it may have been delivered, not that it was not sent", async () => {
    const typed = "Deploy to staging now"
    const titles: Array<string> = []
    const ctx: IntercomCommandContext = {
      mode: "tui",
      ui: {
        select: async (_title, options) => options[0],
        editor: async (title) => {
          titles.push(title)
          return titles.length === 1 ? typed : undefined
        },
        notify: () => undefined
      }
    }
    const unknown: ToolResult = {
      text: `Message to "reviewer" may or may not have been delivered: Send timeout. Check with the recipient before sending it again, or it may arrive twice`,
      isError: true,
      details: { error: "DeliveryUnknown" }
    }
    const run = async (params: IntercomToolParams): Promise<ToolResult> => params.action === "list" ? listing : unknown
    await openIntercom(ctx, "", run)
    assert.deepStrictEqual(titles, [
      "Message to reviewer",
      "Maybe delivered to reviewer (see the error above): check with reviewer before sending again, or close to discard"
    ])
  })
})
