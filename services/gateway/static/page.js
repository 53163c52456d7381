"use strict";
// Hindsight's web page: ask (answer first), search, history with permalinks, the library of folders.
// Everything goes through the gateway's /v1 API with the key from the field (kept in localStorage).
const $ = (id) => document.getElementById(id);
// The event vocabulary the gateway publishes (GET /events/schema), loaded before anything streams:
// STAGE.PLAN is the plan stage's name in events, STAGE_LABELS[name] what the page shows while it runs.
const STAGE = {};
const STAGE_LABELS = {};
let asking = null; // { id, controller, candidates, started } while a question streams
let conversation = null; // { id, turns: [{ question, answer }] }: the turns above the current one
let current = null; // { question, answer }: the turn on show

// ---------- key, API, server-sent events ----------

function hashParams() {
  return new URLSearchParams(location.hash.slice(1));
}

function setHash(params) {
  const text = params.toString();
  history.replaceState(null, "", location.pathname + (text ? `#${text}` : ""));
}

function restoreKey() {
  const params = hashParams();
  const fromUrl = params.get("key");
  if (fromUrl) {
    localStorage.setItem("hindsight-key", fromUrl);
    params.delete("key");
    setHash(params);
  }
  $("api-key").value = localStorage.getItem("hindsight-key") || "";
  document.body.classList.toggle("keyed", Boolean($("api-key").value));
}

function headers(extra = {}) {
  const key = $("api-key").value.trim();
  return key ? { "X-API-Key": key, ...extra } : extra;
}

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

function reasonOf(body, fallback) {
  if (typeof body.detail === "string") return body.detail;
  if (Array.isArray(body.detail)) {
    return body.detail.map((e) => `${(e.loc || []).filter((p) => p !== "body").join(".")}: ${e.msg}`).join("; ");
  }
  return fallback;
}

async function api(path, options = {}) {
  let response;
  try {
    response = await fetch(path, { ...options, headers: headers(options.headers || {}) });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, "Hindsight isn't running — start it with `hindsight up`, then reload this page");
  }
  if (!response.ok) {
    let reason = response.statusText;
    try { reason = reasonOf(await response.json(), reason); } catch (_) { /* not JSON */ }
    if (response.status === 401) {
      showKeyProblem(reason);
      throw new ApiError(401, `The API key was refused (${reason}). Paste a valid key at the top.`);
    }
    const retry = response.headers.get("Retry-After");
    throw new ApiError(response.status, `${reason}${retry ? ` (retry in ${retry} s)` : ""}`);
  }
  return response;
}

function postJson(path, body, options = {}) {
  return api(path, { method: "POST", body: JSON.stringify(body), headers: { "Content-Type": "application/json" }, ...options });
}

// Server-sent events over fetch, because EventSource cannot send the API key header.
async function follow(path, onEvent, signal) {
  const response = await api(path, { headers: { Accept: "text/event-stream" }, signal });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
      if (data) onEvent(JSON.parse(data));
    }
  }
}

function showKeyProblem(reason) {
  const banner = $("key-problem");
  banner.textContent = `The API key was refused (${reason}). Paste a valid key in the field at the top; ` +
    "`hindsight open` opens this page with the CLI's key.";
  banner.hidden = false;
  document.body.classList.add("key-open");
}

async function checkKey() {
  $("key-problem").hidden = true;
  try {
    await loadHistory();
    return true;
  } catch (error) {
    if (error.status !== 401) showError("ask-error", error);
    return false;
  }
}

// ---------- small DOM helpers ----------

function element(tag, attributes = {}, text = "") {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  if (text) node.textContent = text;
  return node;
}

function showError(id, error) {
  $(id).textContent = error.message || String(error);
  $(id).hidden = false;
}

function clearErrors() {
  for (const id of ["ask-error", "search-error", "index-error", "perplexity-check-error"]) $(id).hidden = true;
}

function fileName(uri) {
  return uri.split("/").pop();
}

// ---------- Markdown, rendered safely ----------
// markdown-it (raw HTML off: a <script> in a source stays text) then DOMPurify on what it made; the
// result is a DOM fragment, never assigned as HTML. Links open in a new tab without a referrer.
// Images become their alt text: the CSP loads none from elsewhere, and a source's badges are noise.
const markdown = window.markdownit({ html: false, linkify: false, typographer: false });
markdown.renderer.rules.image = (tokens, index) => markdown.utils.escapeHtml(tokens[index].content);

function sanitised(html) {
  const fragment = DOMPurify.sanitize(html, { RETURN_DOM_FRAGMENT: true });
  for (const link of fragment.querySelectorAll("a")) {
    link.target = "_blank";
    link.rel = "noopener noreferrer";
  }
  return fragment;
}

function markdownBlock(text) {
  return sanitised(markdown.render(text));
}

function markdownInline(text) {
  return sanitised(markdown.renderInline(text));
}

// Kinds whose indexed text is Markdown: Markdown files, and HTML pages (extracted as Markdown).
const MARKDOWN_KINDS = new Set(["markdown", "html"]);

// A title as plain text: `[libcbor](https://…)` reads "libcbor", `**x**` reads "x".
function plainTitle(text) {
  return markdownInline(text).textContent;
}

// Each text node of `root` outside code and links, for marking up words or [n] markers in place.
function proseTextNodes(root) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => (node.parentElement && node.parentElement.closest("code, pre, a") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  return nodes;
}

// Replace each match of `pattern` in the prose of `root` by the node `make(match)` returns.
function replaceInText(root, pattern, make) {
  for (const node of proseTextNodes(root)) {
    const text = node.textContent;
    const matches = [...text.matchAll(pattern)];
    if (!matches.length) continue;
    const fragment = document.createDocumentFragment();
    let last = 0;
    for (const match of matches) {
      fragment.append(text.slice(last, match.index), make(match));
      last = match.index + match[0].length;
    }
    fragment.append(text.slice(last));
    node.replaceWith(fragment);
  }
  return root;
}

// A passage with each occurrence of a query word wrapped in <mark>: a Markdown file's rendered, any
// other kind's as its plain text.
function highlighted(text, words, isMarkdown) {
  const root = element("div");
  if (isMarkdown) root.append(markdownBlock(text));
  else root.append(text);
  const usable = words.filter((w) => w.length > 1).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  if (!usable.length) return root;
  return replaceInText(root, new RegExp(`(${usable.join("|")})`, "gi"), (match) => element("mark", {}, match[0]));
}

// ---------- filters (chips) ----------

function filtersOf(containerId) {
  const container = $(containerId);
  const value = (name) => container.querySelector(`[data-filter=${name}]`).value.trim();
  const filters = {};
  if (value("kind")) filters.kinds = [value("kind")];
  if (value("space")) filters.spaces = [value("space")];
  if (value("from")) filters.date_from = `${value("from")}T00:00:00`;
  if (value("to")) filters.date_to = `${value("to")}T23:59:59`;
  return filters;
}

for (const container of document.querySelectorAll("[data-filters]")) {
  container.addEventListener("input", (e) => {
    const chip = e.target.closest("label");
    if (chip) chip.classList.toggle("active", Boolean(e.target.value.trim()));
  });
}

// ---------- tabs ----------

function showTab(tab) {
  for (const button of document.querySelectorAll(".tabs button")) {
    const selected = button === tab;
    button.setAttribute("aria-selected", String(selected));
    $(button.dataset.view).hidden = !selected;
  }
  const onAsk = tab.id === "tab-ask";
  $("answer-section").hidden = !onAsk || !$("answer-section").dataset.filled;
  $("evidence-section").hidden = !onAsk || !$("evidence-section").dataset.filled;
}

for (const button of document.querySelectorAll(".tabs button")) button.addEventListener("click", () => showTab(button));

// ---------- asking ----------

function stageExtra(event) {
  const d = event.data || {};
  if (event.stage === STAGE.PLAN && d.plan) {
    const keywords = d.plan.hard_keywords.length ? `; keywords: ${d.plan.hard_keywords.join(", ")}` : "";
    return `${d.plan.strategy}, ${d.plan.planner} planner; variations: ${d.plan.variations.join(" | ")}${keywords}`;
  }
  if (event.stage === STAGE.SEARCH && d.legs) {
    return "legs: " + Object.entries(d.legs).map(([leg, n]) => `${leg} ${n}`).join(", ") + ` → ${d.candidates} fused`;
  }
  if (event.stage === STAGE.RERANK && d.received !== undefined) {
    return `rerank ${d.received} → ${d.kept}${d.used_fallback ? " (fallback top " + d.fallback_k + ")" : ""}${d.model ? "" : " (no cross-encoder: fused order kept)"}`;
  }
  return "";
}

function renderEvent(event) {
  const item = element("li", { "data-stage": event.stage, "data-status": event.status });
  item.append(element("span", { class: "stage" }, event.stage), element("span", { class: `status ${event.status}` }, event.status));
  item.append(element("span", { class: "detail" }, event.detail));
  if (event.elapsed_ms) item.append(element("span", { class: "ms" }, ` (${Math.round(event.elapsed_ms)} ms)`));
  const extra = stageExtra(event);
  if (extra) item.append(element("div", { class: "extra" }, extra));
  $("stages").append(item);
  if (event.stage === STAGE.SEARCH && event.data && event.data.candidates !== undefined && asking) asking.candidates = event.data.candidates;
  const line = $("stage-line");
  line.classList.toggle("warning", event.stage === STAGE.WAITING);
  line.textContent = event.stage === STAGE.WAITING ? event.detail : `${STAGE_LABELS[event.stage] || event.stage}…`;
}

function counted(count, noun) {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

function summaryLine(answer, candidates) {
  const seconds = ((answer.timings_ms && answer.timings_ms.total) || 0) / 1000;
  const parts = ["Searched your notes"];
  if (candidates !== undefined && candidates !== null) parts.push(counted(candidates, "passage"));
  parts.push(counted(answer.sources_explored.length, "source"));
  if (seconds) parts.push(`${seconds.toFixed(1)} s`);
  return parts.join(" · ");
}

function answerBody(answer) {
  // The answer's Markdown rendered, each [n] outside code a link to its evidence.
  const byNumber = new Map(answer.citations.map((c) => [c.number, c]));
  const root = element("div", { class: "markdown" });
  root.append(markdownBlock(answer.markdown));
  replaceInText(root, /\[(\d+)\]/g, (match) => {
    const citation = byNumber.get(Number(match[1]));
    const link = element("a", { class: "cite" + (citation && !citation.verified ? " unverified" : ""), "data-n": match[1], href: "#" }, match[0]);
    if (citation) link.title = `${plainTitle(citation.title)} — ${citation.source_uri}${citation.line ? `:${citation.line}` : ""} (${quoteLabel(citation)})`;
    link.addEventListener("click", (e) => { e.preventDefault(); showEvidence(answer.question_id, Number(match[1])); });
    return link;
  });
  return [...root.childNodes];
}

// The labels say what was checked and nothing more (as shared/citations.py words them for the CLI):
// a quote "found in file" is not a quote that answers; how well it answers is the cross-encoder's.
function quoteLabel(citation) {
  return citation.verified ? "quote found in file" : "quote not found in file";
}

// A file not in UTF-8 says how its bytes were read (the indexer reads Latin-1 as Windows-1252).
const ENCODING_NAMES = { "windows-1252": "Windows-1252" };
function encodingLabel(evidence) {
  if (!evidence.encoding || evidence.encoding === "utf-8") return "";
  return `decoded as ${ENCODING_NAMES[evidence.encoding] || evidence.encoding}`;
}

function rankLabel(citation) {
  if (!citation.rank) return "";
  if (citation.rerank_score === null || citation.rerank_score === undefined) return `passage #${citation.rank} by search rank`;
  return `passage #${citation.rank}, cross-encoder ${citation.rerank_score.toFixed(2)}`;
}

function relevanceLine(judged) {
  if (!judged) return "How well it answers: not recorded for this answer";
  if (judged.judge === "retrieval" || judged.top_score === null) return "How well it answers: not scored (no cross-encoder ran; passages in search order)";
  const best = `the cross-encoder scores the best passage ${judged.top_score.toFixed(2)}`;
  if (judged.answerable === null || judged.answerable === undefined) return `How well it answers: ${best} (no calibrated cut to say whether it answers)`;
  return `How well it answers: ${best}, ${judged.answerable ? "at or above" : "under"} its cut for a passage that answers`;
}

function checksLine(answer) {
  const found = answer.citations.filter((c) => c.verified).length;
  const line = `Checked: ${found}/${answer.citations.length} quotes found in their files`;
  if (answer.mode === "extractive") return `${line}; the sentences are quotes, nothing checked that they answer`;
  const kept = answer.verdicts.filter((v) => v.supported).length;
  const judged = answer.verdicts.some((v) => v.method === "llm") ? "an LLM and word overlap" : "word overlap";
  return `${line}; ${kept}/${answer.verdicts.length} written sentences matched their quotes (${judged})`;
}

function renderAnswer(answer, candidates) {
  $("answer").replaceChildren(...answerBody(answer));
  const asked = $("answer-question").textContent;
  $("searched-for").hidden = answer.question === asked;
  $("searched-for").textContent = `Searched for: ${answer.question}`;
  $("relevance").textContent = relevanceLine(answer.relevance);
  $("verification").textContent = checksLine(answer);
  renderSources(answer);
  $("stage-line").classList.remove("warning");
  $("stage-line").textContent = summaryLine(answer, candidates);
  $("copy").disabled = false;
  $("copy").onclick = () => copyAnswer(answer);
  current = { question: asked, answer };
  $("save-note").disabled = false;
  $("follow-up-form").hidden = !conversation;
}

function renderThread() {
  const turns = conversation ? conversation.turns : [];
  $("thread").replaceChildren(...turns.map((turn) => {
    const item = element("li", { class: "turn-item" });
    item.append(element("h3", {}, turn.question), ...answerBody(turn.answer));
    return item;
  }));
}

function renderSources(answer) {
  // Each source explored; one the answer cites opens its first cited passage (click, Enter or Space).
  const sources = answer.sources_explored;
  const list = $("sources");
  list.replaceChildren();
  for (const source of sources) {
    const cited = answer.citations.find((c) => c.source_uri === source.source_uri);
    const item = element("li", { title: source.source_uri });
    item.append(element("span", { class: "title" }, plainTitle(source.title) || fileName(source.source_uri)));
    const facts = [source.kind, source.space, source.document_date && source.document_date.slice(0, 10)].filter(Boolean);
    item.append(element("span", { class: "where" }, [...facts, fileName(source.source_uri)].join(" · ")));
    if (source.preview) {
      const preview = element("span", { class: "preview" });
      // The preview is one line of the passage: its inline Markdown rendered, a heading's marks dropped.
      preview.append(MARKDOWN_KINDS.has(source.kind) ? markdownInline(source.preview.replace(/^#{1,6}\s+/, "")) : source.preview);
      item.append(preview);
    }
    if (cited) {
      item.classList.add("cited");
      item.setAttribute("role", "button");
      item.setAttribute("tabindex", "0");
      item.setAttribute("aria-label", `open the passage cited as [${cited.number}] from ${plainTitle(source.title)}`);
      item.append(element("span", { class: "open" }, `open cited passage [${cited.number}]`));
      const open = () => showEvidence(answer.question_id, cited.number);
      item.addEventListener("click", open);
      item.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); open(); } });
    } else {
      item.append(element("span", { class: "open muted" }, "explored, not cited"));
    }
    list.append(item);
  }
  $("sources-strip").hidden = sources.length === 0;
}

function answerMarkdown(answer) {
  const sources = answer.citations.map((c) => `[${c.number}] ${c.title} — ${c.source_uri}${c.line ? `:${c.line}` : c.page ? `#page=${c.page}` : ""}${c.source_url ? ` ${c.source_url}` : ""}\n    > ${c.quote.replace(/\s+/g, " ")}`);
  return `## ${answer.question}\n\n${answer.markdown}\n\n### Sources\n\n${sources.join("\n")}\n`;
}

async function copyAnswer(answer) {
  const text = answerMarkdown(answer);
  try {
    await navigator.clipboard.writeText(text);
  } catch (_) {
    const area = element("textarea");
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  $("copy-status").textContent = "copied";
  setTimeout(() => { $("copy-status").textContent = ""; }, 2000);
}

function openAnswerSection(question, id) {
  $("answer-question").textContent = question;
  $("answer").replaceChildren();
  $("verification").textContent = "";
  $("relevance").textContent = "";
  $("sources-strip").hidden = true;
  $("stages").replaceChildren();
  $("stage-details").open = false;
  $("stage-line").textContent = "Starting…";
  $("copy").disabled = true;
  $("evidence-section").hidden = true;
  delete $("evidence-section").dataset.filled;
  $("permalink").href = conversation ? `#c=${conversation.id}` : `#q=${id}`;
  $("searched-for").hidden = true;
  $("follow-up-form").hidden = true;
  $("save-note").disabled = true;
  current = { question, answer: null };
  renderThread();
  $("answer-section").dataset.filled = "1";
  $("answer-section").hidden = false;
}

async function streamQuestion(id) {
  asking = { id, controller: new AbortController(), candidates: null };
  $("cancel").hidden = false;
  $("ask").disabled = true;
  try {
    await follow(`/v1/questions/${id}/events`, (event) => {
      if (event.stage === STAGE.ANSWER && event.status === "done") renderAnswer(event.data.answer, asking.candidates);
      else if (event.stage === STAGE.ANSWER) throw new Error(event.detail);
      else renderEvent(event);
    }, asking.controller.signal);
  } catch (error) {
    if (error.name !== "AbortError") {
      showError("ask-error", error);
      $("stage-line").textContent = `Stopped: ${error.message}`;
    }
  } finally {
    asking = null;
    $("cancel").hidden = true;
    $("ask").disabled = false;
    loadHistory().catch(() => {});
  }
}

$("ask-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  clearErrors();
  const question = $("question").value.trim();
  if (!question) return;
  const filters = filtersOf("ask-filters");
  const options = { strategy: $("strategy").value || null, filters };
  try {
    $("ask").disabled = true;
    const accepted = await (await postJson("/v1/questions", { question, options })).json();
    conversation = { id: accepted.conversation_id, turns: [] };
    const params = hashParams();
    params.delete("q");
    params.set("c", accepted.conversation_id);
    setHash(params);
    openAnswerSection(question, accepted.id);
    loadHistory().catch(() => {});
    await streamQuestion(accepted.id);
  } catch (error) {
    showError("ask-error", error);
    $("ask").disabled = false;
  }
});

$("follow-up-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  clearErrors();
  const question = $("follow-up").value.trim();
  if (!question || !conversation || !current || !current.answer) return;
  try {
    $("follow-up-ask").disabled = true;
    const body = { question, conversation_id: conversation.id };
    const accepted = await (await postJson("/v1/questions", body)).json();
    conversation.turns.push(current);
    $("follow-up").value = "";
    openAnswerSection(question, accepted.id);
    loadHistory().catch(() => {});
    await streamQuestion(accepted.id);
  } catch (error) {
    showError("ask-error", error);
  } finally {
    $("follow-up-ask").disabled = false;
  }
});

$("note-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  if (!current || !current.answer) return;
  const folder = $("note-folder").value.trim();
  localStorage.setItem("hindsight-notes", folder);
  try {
    const saved = await (await postJson(`/v1/questions/${current.answer.question_id}/note`, { folder })).json();
    $("copy-status").textContent = `saved as ${saved.path}`;
    await postJson("/v1/index", { root: folder });
  } catch (error) {
    $("copy-status").textContent = `not saved: ${error.message}`;
  }
});

$("cancel").addEventListener("click", async () => {
  if (!asking) return;
  try {
    await api(`/v1/questions/${asking.id}`, { method: "DELETE" });
  } catch (error) {
    showError("ask-error", error);
  }
});

async function showEvidence(questionId, number) {
  const panel = $("evidence");
  $("evidence-section").dataset.filled = "1";
  $("evidence-section").hidden = false;
  $("evidence-number").textContent = `[${number}]`;
  panel.replaceChildren(element("p", { class: "muted" }, "loading…"));
  try {
    const evidence = await (await api(`/v1/questions/${questionId}/citations/${number}`)).json();
    const where = evidence.line ? `:${evidence.line}` : evidence.page ? `#page=${evidence.page}` : "";
    const passage = element("pre");
    passage.append(evidence.before, element("mark", {}, evidence.quote), evidence.after);
    const heading = element("p", { class: "evidence-title" });
    const title = plainTitle(evidence.title);
    if (evidence.thread_url) heading.append(element("a", { href: evidence.thread_url, target: "_blank", rel: "noopener noreferrer" }, title));
    else heading.append(title);
    const parts = [heading];
    if (evidence.turn_question) parts.push(element("p", { class: "turn" }, `Asked: ${evidence.turn_question}`));
    const labels = [quoteLabel(evidence), rankLabel(evidence), encodingLabel(evidence)].filter(Boolean).join("; ");
    // The file and line are where the quote is; a thread's web address has no lines (its link is the title).
    parts.push(element("p", { class: "muted" }, `${evidence.source_uri}${where} — ${labels}` +
      (evidence.located ? "" : " — source text unavailable, showing the quote")));
    if (evidence.located && evidence.extracted) {
      parts.push(element("p", { class: "muted extracted" }, evidence.page
        ? `Page ${evidence.page} of the PDF as printed, the quote marked; under it, the page's text as indexed`
        : "The text extracted from the page (as it was indexed), headings kept"));
    }
    const printed = evidence.located && evidence.page && /\.pdf$/i.test(evidence.source_uri)
      ? element("div", { class: "pdf-page" }, "loading the page…") : null;
    if (printed) parts.push(printed);
    if (evidence.located && evidence.extracted && !evidence.page) parts.push(publishedPageButton(questionId, number));
    parts.push(passage);
    panel.replaceChildren(...parts);
    if (printed) showPdfPage(printed, questionId, number, evidence.page, evidence.quote);
    $("evidence-section").scrollIntoView({ block: "nearest" });
    passage.querySelector("mark").scrollIntoView({ block: "center" });
  } catch (error) {
    panel.replaceChildren(element("p", { class: "error" }, error.message));
  }
}

// ---------- a PDF's cited page, as printed (PDF.js, vendored in /static) ----------

// The quote's place among a page's text items, whitespace ignored and ligatures unfolded (the
// indexer's text and PDF.js's may break lines and spaces differently): [item index, from, to] triples,
// from/to the fraction of the item's width the quote covers.
function quoteSpans(items, quote) {
  const squeeze = (text) => text.normalize("NFKC").replace(/\s+/g, "");
  const owners = [];
  let stream = "";
  items.forEach((item, index) => {
    const text = squeeze(item.str || "");
    stream += text;
    for (let i = 0; i < text.length; i++) owners.push(index);
  });
  const wanted = squeeze(quote);
  const at = wanted ? stream.indexOf(wanted) : -1;
  if (at < 0) return [];
  const spans = new Map();
  for (let i = at; i < at + wanted.length; i++) {
    const index = owners[i];
    const span = spans.get(index) || { first: i, last: i };
    span.last = i;
    spans.set(index, span);
  }
  return [...spans].map(([index, span]) => {
    const start = owners.indexOf(index);
    const length = squeeze(items[index].str).length;
    return [index, (span.first - start) / length, (span.last + 1 - start) / length];
  });
}

async function showPdfPage(container, questionId, number, pageNumber, quote) {
  let task = null;
  try {
    const pdfjs = await import("/static/pdf.min.mjs");
    pdfjs.GlobalWorkerOptions.workerSrc = "/static/pdf.worker.min.mjs";
    const data = await (await api(`/v1/questions/${questionId}/citations/${number}/file`)).arrayBuffer();
    // Glyphs drawn as paths (no FontFace, which the page's CSP does not admit), no eval.
    task = pdfjs.getDocument({ data, isEvalSupported: false, disableFontFace: true });
    const pdf = await task.promise;
    const page = await pdf.getPage(pageNumber);
    const width = container.clientWidth || 600;
    const viewport = page.getViewport({ scale: width / page.getViewport({ scale: 1 }).width });
    const ratio = window.devicePixelRatio || 1;
    const canvas = element("canvas", { width: Math.round(viewport.width * ratio), height: Math.round(viewport.height * ratio), role: "img", "aria-label": `page ${pageNumber} of the PDF` });
    canvas.style.width = `${viewport.width}px`;
    canvas.style.height = `${viewport.height}px`;
    container.replaceChildren(canvas);
    const scaled = page.getViewport({ scale: viewport.scale * ratio });
    await page.render({ canvas, canvasContext: canvas.getContext("2d"), viewport: scaled }).promise;
    const { items } = await page.getTextContent();
    const spans = quoteSpans(items, quote);
    for (const [index, from, to] of spans) {
      const item = items[index];
      const box = pdfjs.Util.transform(viewport.transform, item.transform);
      const height = Math.hypot(box[2], box[3]);
      const itemWidth = item.width * viewport.scale;
      const mark = element("div", { class: "pdf-mark" });
      Object.assign(mark.style, { left: `${box[4] + itemWidth * from}px`, top: `${box[5] - height}px`,
        width: `${itemWidth * (to - from)}px`, height: `${height * 1.2}px` });
      container.append(mark);
    }
    if (!spans.length) container.append(element("p", { class: "muted" }, "The quote could not be placed on the printed page; it is marked in the text below."));
    else container.querySelector(".pdf-mark").scrollIntoView({ block: "center" });
  } catch (error) {
    container.replaceChildren(element("p", { class: "muted" }, `The printed page could not be shown (${error.message}); the page's text is below.`));
  } finally {
    if (task) task.destroy();
  }
}

// An HTML source as published, in a frame sandboxed without scripts (an opaque origin: it cannot
// read this page's key) under this page's policy (nothing it embeds loads). Shown on request.
function publishedPageButton(questionId, number) {
  const button = element("button", { type: "button", class: "secondary" }, "Show the page as published");
  button.addEventListener("click", async () => {
    try {
      const html = await (await api(`/v1/questions/${questionId}/citations/${number}/file`)).text();
      const frame = element("iframe", { sandbox: "", class: "published", title: "the cited page as published" });
      frame.srcdoc = html;
      button.replaceWith(frame);
    } catch (error) {
      button.replaceWith(element("p", { class: "muted" }, `The page could not be shown (${error.message}).`));
    }
  });
  return button;
}

// ---------- history and permalinks ----------

async function loadHistory() {
  const words = $("history-search").value.trim();
  const query = new URLSearchParams({ limit: "50", ...(words ? { q: words } : {}) });
  const entries = await (await api(`/v1/questions?${query}`)).json();
  const list = $("history");
  list.replaceChildren();
  if (!entries.length) list.append(element("li", { class: "muted" }, words ? "no question matches" : "no questions yet"));
  for (const entry of entries) {
    const item = element("li", { "data-id": entry.id });
    const link = element("a", { href: `#c=${entry.conversation_id}`, title: entry.question }, entry.question);
    link.addEventListener("click", (e) => { e.preventDefault(); openConversation(entry.conversation_id); });
    const erase = element("button", { type: "button", class: "secondary erase", title: "delete this conversation", "aria-label": `delete the conversation of “${entry.question}”` }, "×");
    erase.addEventListener("click", () => deleteConversation(entry.conversation_id, entry.question));
    if (entry.status === "pending") erase.disabled = true;
    item.append(link, element("span", { class: `muted ${entry.status}` }, entry.status === "done" ? new Date(entry.asked_at * 1000).toLocaleDateString() : entry.status), erase);
    list.append(item);
  }
}

async function deleteConversation(id, question) {
  if (!window.confirm(`Delete “${question}” and its conversation's answers? The indexed files are not touched.`)) return;
  try {
    await api(`/v1/conversations/${id}`, { method: "DELETE" });
    if (hashParams().get("c") === id || (conversation && conversation.id === id)) {
      $("answer-section").hidden = true;
      $("evidence-section").hidden = true;
      setHash(new URLSearchParams());
    }
    await loadHistory();
  } catch (error) {
    showError("ask-error", error);
  }
}

let historySearchTimer = null;
$("history-search").addEventListener("input", () => {
  clearTimeout(historySearchTimer);
  historySearchTimer = setTimeout(() => loadHistory().catch((error) => showError("ask-error", error)), 250);
});

async function openConversation(id) {
  // The whole conversation: its earlier turns as the thread, its latest turn as the answer.
  clearErrors();
  showTab($("tab-ask"));
  const params = hashParams();
  params.delete("q");
  params.set("c", id);
  setHash(params);
  try {
    const found = await (await api(`/v1/conversations/${id}`)).json();
    const latest = found.turns[found.turns.length - 1];
    const earlier = found.turns.slice(0, -1).filter((t) => t.answer);
    conversation = { id, turns: earlier.map((t) => ({ question: t.question, answer: t.answer })) };
    await showTurn(latest.question, latest.id, latest);
  } catch (error) {
    showError("ask-error", error);
  }
}

async function openQuestion(id) {
  clearErrors();
  showTab($("tab-ask"));
  conversation = null;
  const params = hashParams();
  params.set("q", id);
  setHash(params);
  try {
    const state = await (await api(`/v1/questions/${id}`)).json();
    await showTurn(state.answer ? state.answer.question : "…", id, state);
  } catch (error) {
    showError("ask-error", error);
  }
}

async function showTurn(question, id, state) {
  // One question in the answer section: its answer, its failure, or its stages as they stream.
  openAnswerSection(question, id);
  if (state.status === "done") {
    renderAnswer(state.answer, null);
  } else if (state.status === "failed") {
    $("stage-line").textContent = `Failed: ${state.error}`;
    showError("ask-error", new Error(state.error));
  } else {
    await streamQuestion(id);
  }
}

// ---------- search ----------

function howFound(ranks) {
  return Object.entries(ranks).sort((a, b) => a[1] - b[1]).map(([leg, rank]) => `${leg} #${rank}`).join(", ");
}

$("search-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  clearErrors();
  const query = $("search-query").value.trim();
  if (!query) return;
  $("search").disabled = true;
  $("results").replaceChildren();
  $("search-summary").textContent = "searching…";
  try {
    const body = { query, mode: $("search-mode").value, limit: 20, filters: filtersOf("search-filters") };
    const result = await (await postJson("/v1/search", body)).json();
    const words = query.replace(/["“”`']/g, "").split(/\s+/);
    for (const candidate of result.candidates) {
      const chunk = candidate.chunk;
      const item = element("li");
      const head = element("div", { class: "head" });
      head.append(element("strong", {}, plainTitle(chunk.title)), element("span", { class: "muted" }, fileName(chunk.source_uri)));
      head.append(element("span", { class: "score" }, `score ${candidate.fused_score.toFixed(3)} · ${howFound(candidate.ranks)}`));
      const text = highlighted((candidate.passage || chunk.text).trim(), words, MARKDOWN_KINDS.has(chunk.kind));
      text.className = MARKDOWN_KINDS.has(chunk.kind) ? "text markdown" : "text";
      item.append(head, text);
      $("results").append(item);
    }
    const mode = result.resolved_mode + (result.mode === "auto" ? " (auto)" : "");
    $("search-summary").textContent = `${result.candidates.length} passages · ${mode} · ${Math.round(result.elapsed_ms)} ms` +
      (result.notes.length ? ` · ${result.notes.join("; ")}` : "");
  } catch (error) {
    $("search-summary").textContent = "";
    showError("search-error", error);
  } finally {
    $("search").disabled = false;
  }
});

// ---------- library ----------

function folderFacts(folder) {
  const report = folder.last_report;
  const facts = [counted(folder.documents, "document")];
  if (report && report.failed) facts.push(`${report.failed} failed`);
  if (folder.running) facts.push("syncing now");
  else if (folder.synced_at) facts.push(`last sync ${new Date(folder.synced_at * 1000).toLocaleString()}`);
  facts.push(folder.watched ? "kept in sync" : "not watched");
  return facts.join(" · ");
}

async function loadLibrary() {
  let folders = [];
  try {
    folders = await (await api("/v1/library")).json();
  } catch (error) {
    if (error.status !== 401) showError("index-error", error);
  }
  const list = $("folders");
  list.replaceChildren();
  for (const folder of folders) {
    const report = folder.last_report;
    const item = element("li", { "data-root": folder.root });
    item.append(element("strong", {}, folder.root));
    item.append(element("div", { class: report && report.failed ? "error" : "muted" }, folderFacts(folder)));
    for (const failure of (report && report.failures) || []) {
      item.append(element("div", { class: "error" }, `${fileName(failure.path)}: ${failure.reason}`));
    }
    const actions = element("div", { class: "actions" });
    const reindex = element("button", { type: "button", class: "secondary" }, "Re-index");
    reindex.addEventListener("click", () => indexFolder(folder.root, false));
    const watch = element("button", { type: "button", class: "secondary" }, folder.watched ? "Stop watching" : "Watch");
    watch.addEventListener("click", () => toggleWatch(folder.root, folder.watched));
    const forget = element("button", { type: "button", class: "secondary", title: "its indexed documents stay searchable" }, "Remove from list");
    forget.addEventListener("click", () => forgetFolder(folder.root));
    actions.append(reindex, watch, forget);
    item.append(actions);
    list.append(item);
  }
}

async function forgetFolder(root) {
  clearErrors();
  try {
    await api(`/v1/library?root=${encodeURIComponent(root)}`, { method: "DELETE" });
  } catch (error) {
    showError("index-error", error);
  }
  await loadLibrary();
}

async function toggleWatch(root, isWatched) {
  clearErrors();
  try {
    if (isWatched) await api(`/v1/watch?root=${encodeURIComponent(root)}`, { method: "DELETE" });
    else await postJson("/v1/watch", { root });
  } catch (error) {
    showError("index-error", error);
  }
  await loadLibrary();
}

async function indexFolder(root, watch) {
  const progress = $("index-progress"), status = $("index-status");
  clearErrors();
  $("index-start").disabled = true;
  status.classList.remove("failed");
  progress.hidden = false; progress.value = 0; progress.max = 1;
  status.textContent = "scanning…";
  try {
    if (watch) await postJson("/v1/watch", { root });
    const accepted = await (await postJson("/v1/index", { root })).json();
    await follow(accepted.events_url, (event) => {
      if (event.stage === STAGE.SCAN && event.status === "done") {
        progress.max = Math.max(1, event.data.new + event.data.changed);
        status.textContent = event.detail;
      } else if (event.stage === STAGE.DOCUMENT && event.data.progress) {
        const job = event.data.progress;
        progress.max = Math.max(1, job.total);
        progress.value = job.done;
        status.textContent = `${job.done}/${job.total} documents — ${event.detail}`;
      } else if (event.stage === STAGE.PROGRESS && event.data && event.data.current_chunks) {
        status.textContent = `${event.data.done}/${event.data.total} documents — ${event.detail}`;
      } else if (event.stage === STAGE.INDEX && event.data && event.data.cancelled) {
        // Cancelled elsewhere (Ctrl-C on `hindsight index`): what was indexed stays, nothing failed.
        status.textContent = `${event.detail}; index the folder again to finish`;
      } else if (event.stage === STAGE.INDEX && event.status === "failed") {
        const reasons = ((event.data && event.data.failures) || []).map((f) => f.reason).join("; ");
        throw new Error(`indexing failed: ${reasons || event.detail}`);
      } else if (event.stage === STAGE.INDEX) {
        progress.value = progress.max;
        const report = event.data;
        const failures = [...(report.failures || []), ...(report.skipped_files || [])].map((f) => `; ${f.path}: ${f.reason}`).join("");
        const failed = (report.failed || 0) > 0;
        status.textContent = `${failed ? `indexed with ${report.failed} failed` : "indexed"} — ${event.detail}${failures}`;
        status.classList.toggle("failed", failed);
      }
    });
  } catch (error) {
    status.textContent = `failed — ${error.message}`;
    status.classList.add("failed");
    showError("index-error", error);
  } finally {
    $("index-start").disabled = false;
    loadLibrary();
  }
}

$("index-form").addEventListener("submit", (e) => {
  e.preventDefault();
  indexFolder($("index-root").value.trim(), $("index-watch").checked);
});

// ---------- Perplexity library check (the files; `hindsight library check` also asks each thread) ----------

function checkSummary(check) {
  const readable = check.threads.filter((t) => t.problem === null);
  const origins = {};
  for (const t of readable) origins[t.origin] = (origins[t.origin] || 0) + 1;
  const byOrigin = Object.keys(origins).sort().map((o) => `${origins[o]} ${o}`).join(", ") || "none";
  const differ = readable.filter((t) => (t.site_turns !== null && t.turns !== t.site_turns) || t.site_complete === false);
  return {
    text: `${counted(readable.length, "thread")}: ${byOrigin} · turns as the site reported them: ` +
      `${readable.length - differ.length} of ${readable.length} · files that did not read as a thread: ` +
      `${check.threads.length - readable.length}`,
    issues: [
      ...differ.map((t) => `${t.path}: ${t.turns} turns, the site listed ${t.site_turns}`),
      ...check.threads.filter((t) => t.problem !== null).map((t) => `${t.path}: ${t.problem}`),
    ],
  };
}

$("perplexity-check-start").addEventListener("click", async () => {
  clearErrors();
  const summary = $("perplexity-check-summary"), issues = $("perplexity-check-issues");
  summary.textContent = "reading the export folder…";
  issues.replaceChildren();
  try {
    const result = checkSummary(await (await api("/v1/library/perplexity")).json());
    summary.textContent = result.text;
    for (const issue of result.issues) issues.append(element("li", { class: "error" }, issue));
  } catch (error) {
    summary.textContent = "";
    showError("perplexity-check-error", error);
  }
});

// ---------- start ----------

// "/" anywhere but in a field puts the cursor in the question box, as on most search pages.
document.addEventListener("keydown", (e) => {
  const typing = e.target.closest("input, textarea, select, [contenteditable]");
  if (e.key !== "/" || typing || e.ctrlKey || e.metaKey || e.altKey) return;
  e.preventDefault();
  $("question").focus();
});

// On a phone the key folds into a button once set, and the filters into another.
function toggleOpen(button, target, className) {
  const open = target.classList.toggle(className);
  button.setAttribute("aria-expanded", String(open));
}
$("key-toggle").addEventListener("click", () => toggleOpen($("key-toggle"), document.body, "key-open"));
$("filters-toggle").addEventListener("click", () => toggleOpen($("filters-toggle"), $("ask-view"), "filters-open"));

// What the page's address names (a permalink's conversation or question), opened once the key works:
// at start, or after a key is entered in a browser that had none.
function openFromAddress() {
  loadLibrary();
  $("note-folder").value = localStorage.getItem("hindsight-notes") || "";
  const conversationId = hashParams().get("c");
  const id = hashParams().get("q");
  if (conversationId) openConversation(conversationId);
  else if (id) openQuestion(id);
}

$("api-key").addEventListener("change", async () => {
  const key = $("api-key").value.trim();
  localStorage.setItem("hindsight-key", key);
  document.body.classList.remove("key-open");
  document.body.classList.toggle("keyed", Boolean(key));
  if (await checkKey()) openFromAddress();
});

async function loadEventSchema() {
  const schema = await (await api("/events/schema")).json();
  for (const [key, stage] of Object.entries(schema.stages)) {
    STAGE[key] = stage.name;
    STAGE_LABELS[stage.name] = stage.label.charAt(0).toUpperCase() + stage.label.slice(1);
  }
}

(async function start() {
  restoreKey();
  try {
    await loadEventSchema();
  } catch (error) {
    showError("ask-error", error);
    return;
  }
  if (await checkKey()) openFromAddress();
})();
