// mailfs for OpenCode: mail and nudges between agents. Written by
// "mailfs setup opencode"; a second run rewrites it, so edit the command
// line that wrote it, not this file.
//
// At a session's first prompt it starts the session's live deliverer
// ("mailfs live opencode", a child whose pipes are its doorbell line: it
// ends when OpenCode does) and adds the session-start reminder; at each
// later prompt, the prompt hook's (not at a doorbell or a prompt of its
// own: they name their mail themselves); after each tool call, urgent
// news; when the session goes idle with urgent mail waiting and no
// deliverer runs (it would ring that mail itself), a new turn saying so
// (bounded: never more than three in a row). Each message is named once.
// Everything mailfs prints is bounded as the other runtimes' hooks are.
//
// The deliverer says "delivered" only when OpenCode's own messages show
// the model answered a doorbell: the plugin passes on each doorbell's user
// message as OpenCode records it (its id and text) and each assistant
// message once it completed (its id, when, its error); the deliverer
// orders them by id, as OpenCode does.
import { spawn } from "node:child_process"

const BIN = __BIN__
const HOOK_BIN = __HOOKBIN__ // mailfs-hook: the per-turn calls, from a smaller binary
const AGENT = __AGENT__ || process.env.MAILFS_AGENT || ""
const LIMIT = 64 * 1024
const DOORBELL = "mailfs doorbell for " + AGENT + ": "

// hook runs "mailfs hook EVENT AGENT --runtime plain" with the event on
// standard input, and resolves to what it printed ("" on any failure).
function hook(event, payload) {
  return new Promise((resolve) => {
    if (!AGENT) return resolve("")
    let out = ""
    const p = spawn(HOOK_BIN, ["hook", event, AGENT, "--runtime", "plain"], { stdio: ["pipe", "pipe", "inherit"] })
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
    p.stdin.end(JSON.stringify(payload))
  })
}

// prompt hands text to the session as its next prompt (a new turn when it
// is idle, after the running tool call when it is busy).
function prompt(client, id, text) {
  const parts = [{ type: "text", text }]
  return client.session.promptAsync({ sessionID: id, parts, path: { id }, body: { parts } })
}

// after is a part id that sorts right after id (OpenCode orders a
// message's parts by id): id itself, one letter longer.
function after(id) {
  return id + "z"
}

export const Mailfs = async ({ client }) => {
  const started = new Set()
  const deliverers = new Map()
  const mine = new Set() // the prompts this plugin sent, which name their mail themselves

  // tell passes a line to session id's deliverer, if it runs.
  const tell = (id, m) => {
    const p = deliverers.get(id)
    if (p) p.stdin.write(JSON.stringify(m) + "\n")
  }

  const startDeliverer = (id) => {
    if (deliverers.has(id) || !AGENT || /^(off|0|false|no)$/i.test(process.env.MAILFS_LIVE || "")) return
    const p = spawn(BIN, ["live", "opencode", AGENT, "--session", id], { stdio: ["pipe", "pipe", "inherit"] })
    deliverers.set(id, p)
    p.on("error", () => deliverers.delete(id))
    p.on("close", () => deliverers.delete(id))
    p.stdin.on("error", () => {})
    const answer = (m) => p.stdin.write(JSON.stringify(m) + "\n")
    let buf = ""
    p.stdout.on("data", (d) => {
      buf += d
      let i
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i)
        buf = buf.slice(i + 1)
        let m
        try {
          m = JSON.parse(line)
        } catch {
          continue
        }
        if (m.type !== "ring") continue
        Promise.resolve(prompt(client, id, m.text)).then(
          (r) => answer(r && r.error ? { type: "rung", id: m.id, error: JSON.stringify(r.error) } : { type: "rung", id: m.id }),
          (e) => answer({ type: "rung", id: m.id, error: String(e) }),
        )
      }
    })
  }

  return {
    "chat.message": async (input, output) => {
      const id = input.sessionID
      const text = output.parts.filter((p) => p.type === "text").map((p) => p.text).join("\n")
      const first = !started.has(id)
      started.add(id)
      startDeliverer(id)
      if (!first && mine.delete(text)) return // a hold of its own: it names its mail itself
      if (!first && AGENT && text.includes(DOORBELL)) {
        // A doorbell names its mail itself; the prompt hook would name it
        // again (and mail a later doorbell names). Its evidence is the
        // model's answer, after this message.
        if (output.message && output.message.id) tell(id, { type: "message", id: output.message.id, role: "user", text })
        return
      }
      const add = await hook(first ? "session-start" : "prompt-submit", { session_id: id, prompt: text, source: "startup" })
      const last = output.parts[output.parts.length - 1]
      if (add && last) output.parts.push({ ...last, type: "text", id: after(last.id), text: add, synthetic: true })
    },
    "tool.execute.after": async (input, output) => {
      const add = await hook("post-tool", { session_id: input.sessionID })
      if (add && typeof output.output === "string") output.output += "\n\n" + add
    },
    event: async ({ event }) => {
      const id = event.properties && event.properties.sessionID
      if (event.type === "session.status" && deliverers.has(id)) {
        tell(id, { type: "status", status: event.properties.status.type })
      }
      const info = event.type === "message.updated" && event.properties && event.properties.info
      if (info && info.role === "assistant" && info.time && info.time.completed && deliverers.has(info.sessionID)) {
        const error = info.error ? String(info.error.name || "error") : ""
        tell(info.sessionID, { type: "message", id: info.id, role: "assistant", at: info.time.completed, error })
      }
      if (event.type === "session.idle" && id && !deliverers.has(id)) {
        // (A deliverer rings urgent mail itself: a hold would name it again.)
        const hold = await hook("stop", { session_id: id })
        if (hold) {
          mine.add(hold)
          await Promise.resolve(prompt(client, id, hold)).catch(() => mine.delete(hold))
        }
      }
    },
  }
}
