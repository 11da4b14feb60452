// mailfs for pi: mail and nudges between agents. Written by "mailfs setup
// pi"; a second run rewrites it, so edit the command line that wrote it,
// not this file.
//
// When a session starts it starts the session's live deliverer ("mailfs
// live pi", a child whose pipes are its doorbell line: it ends when the
// session does, at pi's exit or a switch to another session). Before
// each turn it adds the session-start reminder (the first turn) or the
// prompt hook's (not to a doorbell or a prompt of its own: they name
// their mail themselves); after each tool call, urgent news; when a turn
// ends with urgent mail waiting and no deliverer runs (it would ring that
// mail itself), a new turn saying so (bounded: never more than three in a
// row). Each message is named once. The deliverer is told the session's
// file, where pi records the conversation: a doorbell is delivered when
// an answer of the model's follows it there. pi has no MCP by design: the
// skill teaches the mailfs commands.
import { spawn } from "node:child_process"

const BIN: string = __BIN__
const HOOK_BIN: string = __HOOKBIN__ // mailfs-hook: the per-turn calls, from a smaller binary
const AGENT: string = __AGENT__ || process.env.MAILFS_AGENT || ""
const LIMIT = 64 * 1024
const DOORBELL = "mailfs doorbell for " + AGENT + ": "

// run runs mailfs with args and input on standard input, and resolves to
// what it printed ("" on any failure).
function run(args: string[], input: string): Promise<string> {
  return new Promise((resolve) => {
    if (!AGENT) return resolve("")
    let out = ""
    const p = spawn(HOOK_BIN, args, { stdio: ["pipe", "pipe", "inherit"] })
    const timer = setTimeout(() => p.kill(), 15000)
    p.stdout.on("data", (d) => {
      if (out.length < LIMIT) out += d
    })
    p.on("error", () => {
      clearTimeout(timer)
      resolve("")
    })
    p.on("close", () => {
      clearTimeout(timer)
      resolve(out.trim())
    })
    p.stdin.on("error", () => {})
    p.stdin.end(input)
  })
}

const hook = (event: string, payload: object) => run(["hook", event, AGENT, "--runtime", "plain"], JSON.stringify(payload))

export default function (pi: any) {
  let first = true
  let busy = false
  let deliverer: any = null
  const mine = new Set<string>() // the prompts this extension sent, which name their mail themselves

  const status = (s: string) => deliverer && deliverer.stdin.write(JSON.stringify({ type: "status", status: s }) + "\n")
  const start = (id: string, file: string) => {
    if (deliverer || !AGENT || /^(off|0|false|no)$/i.test(process.env.MAILFS_LIVE || "")) return
    const p = spawn(BIN, ["live", "pi", AGENT, "--session", id], { stdio: ["pipe", "pipe", "inherit"] })
    deliverer = p
    p.on("error", () => (deliverer = null))
    p.on("close", () => (deliverer = null))
    p.stdin.on("error", () => {})
    let buf = ""
    p.stdout.on("data", (d: Buffer) => {
      buf += d
      let i
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i)
        buf = buf.slice(i + 1)
        let m: any
        try {
          m = JSON.parse(line)
        } catch {
          continue
        }
        if (m.type !== "ring") continue
        try {
          if (busy) pi.sendUserMessage(m.text, { deliverAs: "steer" })
          else pi.sendUserMessage(m.text)
          p.stdin.write(JSON.stringify({ type: "rung", id: m.id }) + "\n")
        } catch (e) {
          p.stdin.write(JSON.stringify({ type: "rung", id: m.id, error: String(e) }) + "\n")
        }
      }
    })
    status(busy ? "busy" : "idle")
    if (file) p.stdin.write(JSON.stringify({ type: "record", path: file }) + "\n")
  }

  pi.on("session_start", async (_event: any, ctx: any) => {
    const file = ctx.sessionManager && ctx.sessionManager.getSessionFile && ctx.sessionManager.getSessionFile()
    start(file ? String(file).replace(/^.*\//, "").replace(/\.jsonl$/, "") : "pi-" + process.pid, file ? String(file) : "")
  })
  // The session ends or gives way to another (/new, /resume, /fork): its
  // deliverer ends with it (SIGTERM: it keeps its receipts), before the
  // next session's extension starts that session's own.
  pi.on("session_shutdown", async () => {
    const p = deliverer
    deliverer = null
    if (!p || p.exitCode !== null || p.signalCode !== null) return
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, 5000)
      p.on("close", () => {
        clearTimeout(timer)
        resolve(null)
      })
      p.kill("SIGTERM")
    })
  })
  pi.on("agent_start", async () => {
    busy = true
    status("busy")
  })
  pi.on("before_agent_start", async (event: any) => {
    const p = String(event.prompt || "")
    if (!first && (mine.delete(p) || (AGENT && p.includes(DOORBELL)))) return // it names its mail itself
    const add = await hook(first ? "session-start" : "prompt-submit", { prompt: event.prompt || "", source: "startup" })
    first = false
    if (add) return { message: { customType: "mailfs", content: add, display: false } }
  })
  pi.on("tool_result", async (event: any) => {
    const add = await hook("post-tool", {})
    if (add) return { content: [...(event.content || []), { type: "text", text: add }] }
  })
  pi.on("agent_end", async () => {
    busy = false
    status("idle")
    if (deliverer) return // it rings urgent mail itself: a hold would name it again
    const hold = await hook("stop", {})
    if (hold) {
      mine.add(hold)
      pi.sendUserMessage(hold, { deliverAs: "followUp" })
    }
  })
}
