// The sandbox page: shows the fake Slack's state and sends what the person does to the page server,
// which signs it and forwards it to the real web process like Slack would. Vanilla JS, no build step.
"use strict";

const POLL_MS = 500;
// The run's token, from the URL `threadline sandbox` printed; every API call carries it.
const TOKEN = new URLSearchParams(location.search).get("token") || "";
const API_HEADERS = { "X-Threadline-Token": TOKEN };
const view = { channel: null, thread: null, state: null, shown: "" };
const $ = (id) => document.getElementById(id);

// ---- text: Slack mrkdwn (and the markdown block's Markdown), escaped ------------------------------

function escapeHtml(text) {
  // Slack text arrives with &, <, > already escaped; keep those entities, escape everything else.
  return String(text)
    .replace(/&(?!(amp|lt|gt|quot|#\d+);)/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");
}

function personName(id) {
  const state = view.state;
  if (state && id === state.bot.id) return state.bot.name;
  if (state && id === state.person.id) return state.person.name;
  return id;
}

function slackToken(inner) {
  const [target, label] = inner.split("|", 2);
  if (target.startsWith("@")) return `<span class="mention">@${escapeHtml(personName(target.slice(1)))}</span>`;
  if (target.startsWith("#")) return `<span class="mention">#${escapeHtml(label || target.slice(1))}</span>`;
  if (target.startsWith("!")) return `<span class="mention">@${escapeHtml(label || target.slice(1))}</span>`;
  if (/^(https?|mailto):/.test(target)) {
    return `<a href="${escapeHtml(target)}" target="_blank" rel="noopener">${escapeHtml(label || target)}</a>`;
  }
  return escapeHtml(`<${inner}>`);
}

// The emoji threadline's cards use, as glyphs every font has (headless browsers lack emoji fonts).
const EMOJI = {
  white_check_mark: ["\u2714", "ok"], x: ["\u2716", "bad"], warning: ["\u26a0", "warn"],
  raised_hand: ["\u261b", "warn"], black_square_for_stop: ["\u25a0", "bad"], no_entry_sign: ["\u2298", "bad"],
  hourglass_flowing_sand: ["\u25d4", "busy"], grey_question: ["?", "warn"], fast_forward: ["\u00bb", "busy"],
  alarm_clock: ["\u25f7", "warn"], eyes: ["\u25c9", "busy"],
};

function emoji(whole, name) {
  const known = EMOJI[name];
  return known ? `<span class="emoji ${known[1]}">${known[0]}</span>` : whole;
}

function inline(text) {
  const kept = [];
  const keep = (html) => `\u0000${kept.push(html) - 1}\u0000`;
  let out = text.replace(/`([^`\n]+)`/g, (_, code) => keep(`<code>${escapeHtml(code)}</code>`));
  out = out.replace(/<([^<>\s][^<>]*)>/g, (_, inner) => keep(slackToken(inner)));
  out = escapeHtml(out)
    .replace(/\*\*([^*\n]+)\*\*/g, "<b>$1</b>")
    .replace(/(^|[\s(])\*([^*\n]+)\*(?=$|[\s).,:;!?])/gm, "$1<b>$2</b>")
    .replace(/(^|[\s(])_([^_\n]+)_(?=$|[\s).,:;!?])/gm, "$1<i>$2</i>")
    .replace(/(^|\s)~([^~\n]+)~(?=$|\s)/gm, "$1<s>$2</s>")
    .replace(/^#{1,6}\s+(.*)$/gm, "<b>$1</b>")
    .replace(/^\s*[-*]\s+/gm, "• ")
    .replace(/:([a-z0-9_+-]+):/g, emoji)
    .replace(/\n/g, "<br>");
  return out.replace(/\u0000(\d+)\u0000/g, (_, index) => kept[Number(index)]);
}

function mrkdwn(text) {
  return String(text || "")
    .split("```")
    .map((part, index) => (index % 2
      ? `<pre>${escapeHtml(part.replace(/^[a-z]*\n/, "").replace(/\n$/, ""))}</pre>`
      : inline(part.replace(/^\n+|\n+$/g, ""))))
    .join("");
}

function textObject(object) {
  if (!object) return "";
  return object.type === "plain_text" ? escapeHtml(object.text) : mrkdwn(object.text);
}

// ---- Block Kit -------------------------------------------------------------------------------------

function buttonHtml(element, message) {
  const style = element.style ? ` ${element.style}` : "";
  const data = `data-channel="${escapeHtml(message.channel)}" data-ts="${escapeHtml(message.ts)}"`
    + ` data-action="${escapeHtml(element.action_id || "")}" data-value="${escapeHtml(element.value || "")}"`;
  return `<button class="block-button${style}" ${data}>${escapeHtml((element.text || {}).text || "Button")}</button>`;
}

function richText(element) {
  if (element.type === "text") return escapeHtml(element.text);
  if (element.type === "user") return slackToken(`@${element.user_id}`);
  if (element.type === "link") return slackToken(`${element.url}|${element.text || element.url}`);
  if (element.type === "rich_text_preformatted") return `<pre>${(element.elements || []).map(richText).join("")}</pre>`;
  if (element.type === "rich_text_list") {
    return (element.elements || []).map((item) => `• ${richText(item)}`).join("<br>");
  }
  return (element.elements || []).map(richText).join("");
}

function blockHtml(block, message) {
  switch (block.type) {
    case "section": {
      const fields = (block.fields || []).map(textObject).join("<br>");
      const accessory = block.accessory && block.accessory.type === "button"
        ? `<div class="actions">${buttonHtml(block.accessory, message)}</div>` : "";
      return `<div class="block">${textObject(block.text)}${fields ? `<div>${fields}</div>` : ""}${accessory}</div>`;
    }
    case "markdown":
      return `<div class="block">${mrkdwn(block.text)}</div>`;
    case "header":
      return `<div class="block"><b>${textObject(block.text)}</b></div>`;
    case "context":
      return `<div class="block context">${(block.elements || []).map((e) => (e.type === "image" ? "" : textObject(e))).join(" ")}</div>`;
    case "divider":
      return `<hr class="divider">`;
    case "actions": {
      const buttons = (block.elements || []).filter((e) => e.type === "button");
      return `<div class="actions">${buttons.map((e) => buttonHtml(e, message)).join("")}</div>`;
    }
    case "context_actions": {
      const feedback = (block.elements || []).filter((e) => e.type === "feedback_buttons");
      const sides = feedback.flatMap((e) => [e.positive_button, e.negative_button]
        .map((side) => ({ ...side, action_id: e.action_id })));
      return `<div class="actions">${sides.map((e) => buttonHtml(e, message)).join("")}</div>`;
    }
    case "rich_text":
      return `<div class="block">${(block.elements || []).map(richText).join("")}</div>`;
    default:
      return "";
  }
}

function filesHtml(message) {
  const files = message.files || [];
  return files.map((file) => `<div class="file">📄 ${escapeHtml(file.title || file.name || "file")}</div>`).join("");
}

// A streamed message: its tool calls as a timeline of tasks, and a mark while it still grows.
const TASK_ICONS = { pending: "○", in_progress: "◔", complete: "✓", error: "✗" };

function tasksHtml(message) {
  const tasks = (message.tasks || []).map((task) => {
    const icon = TASK_ICONS[task.status] || "?";
    const details = task.details ? ` <code>${escapeHtml(task.details)}</code>` : "";
    const output = task.output ? ` — ${escapeHtml(task.output)}` : "";
    return `<div class="task task-${escapeHtml(task.status)}">${icon} ${escapeHtml(task.title)}${details}${output}</div>`;
  });
  const growing = message.streaming ? `<div class="streaming">writing…</div>` : "";
  return tasks.length || growing ? `<div class="tasks">${tasks.join("")}${growing}</div>` : "";
}

function contentHtml(message) {
  const blocks = message.blocks || [];
  if (blocks.length) return blocks.map((block) => blockHtml(block, message)).join("") + tasksHtml(message) + filesHtml(message);
  return `<div class="text">${mrkdwn(message.text)}</div>${tasksHtml(message)}${filesHtml(message)}`;
}

// ---- messages --------------------------------------------------------------------------------------

function clock(ts) {
  return new Date(Number(ts) * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

function messageHtml(message, { inChannel = false } = {}) {
  const bot = Boolean(message.bot_id);
  const ephemeral = message.kind === "ephemeral" || message.kind === "response";
  const name = bot || ephemeral ? view.state.bot.name : personName(message.user);
  const classes = ["message", bot || ephemeral ? "bot" : "person", ephemeral ? "ephemeral" : ""].join(" ");
  const edited = message.edited ? `<span class="edited">(edited)</span>` : "";
  const onlyYou = ephemeral ? `<div class="only-you">Only visible to you${message.by ? ` · ${escapeHtml(message.by)}` : ""}</div>` : "";
  let below = "";
  if (inChannel && !ephemeral) {
    const count = message.reply_count || 0;
    below = count
      ? `<div class="replies" data-thread="${message.ts}">${count} ${count === 1 ? "reply" : "replies"}</div>`
      : "";
    const status = view.state.statuses[`${message.channel}:${message.ts}`];
    if (status) below += `<div class="inline-status">${escapeHtml(view.state.bot.name)} ${escapeHtml(status)}</div>`;
  }
  const reply = inChannel && !ephemeral ? `<span class="reply-link" data-thread="${message.ts}">Reply in thread</span>` : "";
  return `<div class="${classes}" data-ts="${message.ts}">
    <div class="avatar">${escapeHtml(name.slice(0, 1).toUpperCase())}</div>
    <div class="body">
      <div class="meta"><b>${escapeHtml(name)}</b>${bot ? '<span class="app-tag">APP</span>' : ""}${clock(message.ts)}${edited}${reply}</div>
      ${onlyYou}${contentHtml(message)}${reactionsHtml(message)}${below}
    </div></div>`;
}

function reactionsHtml(message) {
  const reactions = message.reactions || [];
  if (!reactions.length) return "";
  const pills = reactions.map(
    (r) => `<span class="reaction" title=":${escapeHtml(r.name)}:">${emoji(`:${escapeHtml(r.name)}:`, r.name)} ${r.count}</span>`,
  );
  return `<div class="reactions">${pills.join("")}</div>`;
}

const byTs = (a, b) => Number(a.ts) - Number(b.ts);

function channelItems(state) {
  const top = state.messages.filter((m) => m.channel === view.channel && (!m.thread_ts || m.thread_ts === m.ts));
  const notes = state.ephemeral.filter((e) => e.channel === view.channel && !e.thread_ts);
  return [...top, ...notes].sort(byTs);
}

function threadItems(state) {
  const inThread = state.messages.filter(
    (m) => m.channel === view.channel && (m.ts === view.thread || m.thread_ts === view.thread),
  );
  const notes = state.ephemeral.filter((e) => e.channel === view.channel && e.thread_ts === view.thread);
  return [...inThread, ...notes].sort(byTs);
}

// ---- rendering -------------------------------------------------------------------------------------

function stickToBottom(element, html) {
  const atBottom = element.scrollHeight - element.scrollTop - element.clientHeight < 40;
  element.innerHTML = html;
  if (atBottom) element.scrollTop = element.scrollHeight;
}

function render() {
  const state = view.state;
  const channel = state.channels.find((c) => c.id === view.channel);
  $("channels").innerHTML = state.channels
    .map((c) => `<li data-channel="${c.id}" class="${c.id === view.channel ? "active" : ""}"># ${escapeHtml(c.name)}</li>`)
    .join("");
  $("channel-title").textContent = `#${channel.name}`;
  $("channel-input").placeholder = `Message #${channel.name} — try “@agent list the files” or “${state.command} help”`;
  const items = channelItems(state);
  stickToBottom(
    $("channel-messages"),
    items.length ? items.map((m) => messageHtml(m, { inChannel: true })).join("")
      : `<div class="empty">Nothing here yet. Say “@agent list the files”.</div>`,
  );
  const problem = state.last_forward && state.last_forward.problem;
  $("problem").hidden = !problem;
  $("problem").textContent = problem ? `The web process answered ${state.last_forward.status}: ${problem}` : "";
  $("thread-pane").hidden = !view.thread;
  if (!view.thread) return;
  const thread = threadItems(state);
  stickToBottom(
    $("thread-messages"),
    thread.map((m, i) => (i === 0 ? `<div class="thread-root">${messageHtml(m)}</div>` : messageHtml(m))).join(""),
  );
  const status = state.statuses[`${view.channel}:${view.thread}`];
  $("thread-status").textContent = status ? `${state.bot.name} ${status}` : "";
}

async function refresh() {
  try {
    const response = await fetch("/api/state", { cache: "no-store", headers: API_HEADERS });
    const text = await response.text();
    if (!response.ok) {
      $("link-state").textContent = `${JSON.parse(text).error} (the page's URL carries its token)`;
      return;
    }
    $("link-state").textContent = "";
    if (text === view.shown) return;
    view.shown = text;
    view.state = JSON.parse(text);
    if (!view.channel) view.channel = view.state.channels[0].id;
    render();
  } catch (error) {
    $("link-state").textContent = "sandbox not answering — is `threadline sandbox` still running?";
  }
}

// ---- what the person does --------------------------------------------------------------------------

async function post(path, body) {
  const response = await fetch(path, {
    method: "POST", headers: { ...API_HEADERS, "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (!response.ok) alert(answer.error || `failed (${response.status})`);
  await refresh();
  return answer;
}

// A chosen file as the page API takes it: its name, type and bytes in base64.
function readFile(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve({ name: file.name, mimetype: file.type, content: reader.result.split(",")[1] || "" });
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

async function send(text, threadTs, picker) {
  const trimmed = text.trim();
  const chosen = picker ? Array.from(picker.files) : [];
  if (picker) picker.value = "";
  if (!trimmed && !chosen.length) return null;
  const body = { channel: view.channel, text: trimmed, thread_ts: threadTs || null };
  if (trimmed.startsWith("/")) return post("/api/command", body);
  if (chosen.length) body.files = await Promise.all(chosen.map(readFile));
  return post("/api/say", body);
}

function openThread(ts) {
  view.thread = ts;
  view.shown = "";
  refresh();
  $("thread-input").focus();
}

function wire() {
  $("channel-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = $("channel-input").value;
    $("channel-input").value = "";
    const answer = await send(text, null, $("channel-files"));
    if (answer && answer.ts && /<@|@agent|@threadline/i.test(text)) openThread(answer.ts);
  });
  $("thread-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = $("thread-input").value;
    $("thread-input").value = "";
    send(text, view.thread, $("thread-files"));
  });
  $("thread-close").addEventListener("click", () => { view.thread = null; view.shown = ""; refresh(); });
  $("channels").addEventListener("click", (event) => {
    const item = event.target.closest("li[data-channel]");
    if (!item) return;
    view.channel = item.dataset.channel;
    view.thread = null;
    view.shown = "";
    refresh();
  });
  document.body.addEventListener("click", (event) => {
    const opener = event.target.closest("[data-thread]");
    if (opener) return openThread(opener.dataset.thread);
    const button = event.target.closest("button.block-button");
    if (!button) return;
    button.disabled = true;
    post("/api/click", {
      channel: button.dataset.channel, message_ts: button.dataset.ts,
      action_id: button.dataset.action, value: button.dataset.value,
    });
  });
}

wire();
refresh();
setInterval(refresh, POLL_MS);
