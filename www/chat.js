// chat.js - the llm-fcgi chat page: plain browser JavaScript, no build step.
// Talks to the OpenAI-compatible API of the same origin (/v1/models,
// /v1/chat/completions with stream: true) and renders answers as they
// stream: reasoning_content folded in a <details>, content as markdown
// (Debian's libjs-marked, raw HTML escaped, only safe link targets), tool
// calls as name + arguments. Stop aborts the request (nginx then closes the
// FastCGI connection and llm-fcgi cancels the sequence). Errors are shown
// with the API's own message. Settings and the API key live in
// localStorage. Images (file picker, paste, drag and drop) are sent as
// data: URLs in image_url content parts and shown in the conversation.
'use strict';

const $ = (id) => document.getElementById(id);
const store = window.localStorage;
const KEYS = { key: 'llm-fcgi.apiKey', system: 'llm-fcgi.system', temperature: 'llm-fcgi.temperature',
               'max-tokens': 'llm-fcgi.maxTokens', tools: 'llm-fcgi.tools' };

const state = { model: null, history: [], controller: null, attachments: [] };
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp'];

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

// marked, configured so model output can never inject markup or scripts
function safeHref(href) {
  return /^(https?:|mailto:|#|\/(?!\/))/i.test(href || '') ? href : null;
}
function setupMarked() {
  if (!window.marked) return;
  window.marked.use({
    gfm: true,
    breaks: true,
    renderer: {
      html(html) { return escapeHtml(html); },
      link(href, title, text) {
        const h = safeHref(href);
        if (!h) return text;
        return `<a href="${escapeHtml(h)}" rel="noopener noreferrer" target="_blank"${title ? ` title="${escapeHtml(title)}"` : ''}>${text}</a>`;
      },
      image(href, title, text) {
        return escapeHtml(text || '');
      },
    },
  });
}
function markdown(text) {
  if (!window.marked) return `<p>${escapeHtml(text).replace(/\n/g, '<br>')}</p>`;
  return window.marked.parse(text);
}

function authHeaders() {
  const key = $('key').value.trim();
  const h = { 'Content-Type': 'application/json' };
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

// The API's error message, as it words it: {"error":{"message":...}}
async function apiError(res) {
  const text = await res.text();
  try {
    const j = JSON.parse(text);
    if (j && j.error && j.error.message) return `${res.status}: ${j.error.message}`;
  } catch (e) { /* not JSON: nginx's own page, e.g. 502 */ }
  return `${res.status} ${res.statusText || ''}`.trim() + (text && text.length < 300 ? `: ${text.replace(/<[^>]*>/g, ' ').trim()}` : '');
}

function setStatus(text, isError) {
  const s = $('status');
  s.textContent = text || '';
  s.className = isError ? 'error' : '';
}

async function loadModel() {
  try {
    const res = await fetch('v1/models', { headers: authHeaders() });
    if (!res.ok) {
      state.model = null;
      $('model').textContent = 'no model';
      setStatus(await apiError(res), true);
      if (res.status === 401) { // the key is wrong or missing: show where to enter it
        $('settings').hidden = false;
        $('settings-toggle').setAttribute('aria-expanded', 'true');
      }
      return;
    }
    const j = await res.json();
    state.model = j.data && j.data[0] ? j.data[0].id : null;
    $('model').textContent = state.model || 'no model';
    setStatus('');
  } catch (e) {
    $('model').textContent = 'offline';
    setStatus(`cannot reach the server: ${e.message}`, true);
  }
}

// Only data:image/ URLs the page made itself go into <img src>.
const safeImage = (url) => /^data:image\/(png|jpeg|webp);base64,[A-Za-z0-9+/=]+$/.test(url) ? url : '';

function addMessage(role, text, images) {
  const div = document.createElement('div');
  div.className = `msg ${role}`;
  if (role === 'user') {
    const imgs = (images || []).map((a) =>
      `<img class="attached" alt="${escapeHtml(a.name)}" src="${safeImage(a.url)}">`).join('');
    div.innerHTML = (imgs ? `<div class="images">${imgs}</div>` : '') +
      `<div class="content">${escapeHtml(text).replace(/\n/g, '<br>')}</div>`;
  } else {
    div.innerHTML = '<details class="reasoning" hidden><summary>Reasoning</summary><div class="reasoning-text"></div></details>' +
      '<div class="content"></div><div class="tool-calls"></div><div class="meta"></div>';
  }
  $('messages').appendChild(div);
  div.scrollIntoView({ block: 'end' });
  return div;
}

// Renders the assistant message being streamed (at most once a frame).
function renderer(div) {
  const view = { reasoning: '', content: '', calls: [], pending: false, updates: 0, chunks: 0 };
  view.draw = () => {
    view.pending = false;
    view.updates++;
    div.dataset.updates = String(view.updates);
    const r = div.querySelector('.reasoning');
    if (view.reasoning) {
      r.hidden = false;
      r.querySelector('.reasoning-text').textContent = view.reasoning;
    }
    div.querySelector('.content').innerHTML = markdown(view.content);
    div.querySelector('.tool-calls').innerHTML = view.calls.map((c) =>
      `<div class="tool-call"><span class="label">tool call</span> <code class="name">${escapeHtml(c.name)}</code>` +
      `<pre class="arguments">${escapeHtml(c.arguments)}</pre></div>`).join('');
    div.scrollIntoView({ block: 'end' });
  };
  view.schedule = () => {
    if (!view.pending) {
      view.pending = true;
      requestAnimationFrame(view.draw);
    }
  };
  return view;
}

function applyDelta(view, delta) {
  if (delta.reasoning_content) view.reasoning += delta.reasoning_content;
  if (delta.content) view.content += delta.content;
  for (const t of delta.tool_calls || []) {
    const i = t.index || 0;
    view.calls[i] = view.calls[i] || { id: '', name: '', arguments: '' };
    if (t.id) view.calls[i].id = t.id;
    if (t.function && t.function.name) view.calls[i].name += t.function.name;
    if (t.function && t.function.arguments) view.calls[i].arguments += t.function.arguments;
  }
}

function requestBody() {
  const messages = [];
  const system = $('system').value.trim();
  if (system) messages.push({ role: 'system', content: system });
  messages.push(...state.history);
  const body = { messages, stream: true, stream_options: { include_usage: true } };
  if (state.model) body.model = state.model;
  const t = $('temperature').value.trim();
  if (t !== '') body.temperature = Number(t);
  const m = $('max-tokens').value.trim();
  if (m !== '') body.max_tokens = Number(m);
  const tools = $('tools').value.trim();
  if (tools) body.tools = JSON.parse(tools); // a JSON error is reported by send()
  return body;
}

function setBusy(busy) {
  $('send').hidden = busy;
  $('stop').hidden = !busy;
  $('input').disabled = busy;
  document.body.classList.toggle('busy', busy);
}

// Reads image files into the attachments strip.
function attachFiles(files) {
  for (const f of files) {
    if (!IMAGE_TYPES.includes(f.type)) {
      setStatus(`${f.name || 'file'}: only PNG, JPEG and WebP images can be attached`, true);
      continue;
    }
    const r = new FileReader();
    r.onload = () => { state.attachments.push({ name: f.name || 'pasted image', url: r.result }); drawAttachments(); };
    r.readAsDataURL(f);
  }
}
function drawAttachments() {
  const box = $('attachments');
  box.innerHTML = state.attachments.map((a, i) =>
    `<span class="thumb"><img alt="${escapeHtml(a.name)}" src="${safeImage(a.url)}">` +
    `<button type="button" data-i="${i}" title="remove">×</button></span>`).join('');
  for (const b of box.querySelectorAll('button'))
    b.addEventListener('click', () => { state.attachments.splice(Number(b.dataset.i), 1); drawAttachments(); });
}

async function send(text) {
  let body;
  const images = state.attachments;
  state.attachments = [];
  drawAttachments();
  const content = images.length
    ? [...images.map((a) => ({ type: 'image_url', image_url: { url: a.url } })), ...(text ? [{ type: 'text', text }] : [])]
    : text;
  state.history.push({ role: 'user', content });
  try {
    body = requestBody();
  } catch (e) {
    state.history.pop();
    setStatus(`tools: not valid JSON (${e.message})`, true);
    return;
  }
  addMessage('user', text, images);
  const div = addMessage('assistant');
  const view = renderer(div);
  const meta = div.querySelector('.meta');
  state.controller = new AbortController();
  setBusy(true);
  setStatus('');
  let finish = null, usage = null, failed = false;
  try {
    const res = await fetch('v1/chat/completions', {
      method: 'POST', headers: authHeaders(), body: JSON.stringify(body), signal: state.controller.signal,
    });
    if (!res.ok) {
      failed = true;
      const msg = await apiError(res);
      div.classList.add('failed');
      meta.innerHTML = `<div class="error">${escapeHtml(msg)}</div>`;
      setStatus(msg, true);
      return;
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf('\n\n')) >= 0) {
        const event = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        for (const line of event.split('\n')) {
          if (!line.startsWith('data: ')) continue; // ": ping" comments
          const data = line.slice(6);
          if (data === '[DONE]') continue;
          const j = JSON.parse(data);
          if (j.error) {
            failed = true;
            const msg = j.error.message || JSON.stringify(j.error);
            meta.innerHTML = `<div class="error">${escapeHtml(msg)}</div>`;
            setStatus(msg, true);
            continue;
          }
          if (j.usage) usage = j.usage;
          view.chunks++;
          div.dataset.chunks = String(view.chunks);
          for (const ch of j.choices || []) {
            if (ch.delta) applyDelta(view, ch.delta);
            if (ch.finish_reason) finish = ch.finish_reason;
          }
          view.schedule();
        }
      }
    }
  } catch (e) {
    if (e.name === 'AbortError') {
      finish = 'stopped';
    } else {
      failed = true;
      setStatus(`request failed: ${e.message}`, true);
    }
  } finally {
    view.draw();
    state.controller = null;
    setBusy(false);
    $('input').focus();
    if (!failed || view.content) {
      const parts = [];
      if (finish) parts.push(finish === 'stopped' ? 'stopped' : `finish: ${finish}`);
      if (usage) parts.push(`${usage.completion_tokens} tokens`);
      if (!meta.querySelector('.error')) meta.textContent = parts.join(' · ');
      div.dataset.finish = finish || '';
    }
    if (view.content || view.calls.length) state.history.push({ role: 'assistant', content: view.content });
    else state.history.pop(); // nothing answered: the question can be asked again
  }
}

function saveSetting(id) {
  const v = $(id).value;
  if (v) store.setItem(KEYS[id], v); else store.removeItem(KEYS[id]);
}

function init() {
  setupMarked();
  for (const id of Object.keys(KEYS)) {
    const v = store.getItem(KEYS[id]);
    if (v !== null) $(id).value = v;
    $(id).addEventListener('change', () => {
      saveSetting(id);
      if (id === 'key') loadModel();
    });
  }
  $('settings-toggle').addEventListener('click', () => {
    const s = $('settings');
    s.hidden = !s.hidden;
    $('settings-toggle').setAttribute('aria-expanded', String(!s.hidden));
  });
  $('new-chat').addEventListener('click', () => {
    if (state.controller) state.controller.abort();
    state.history = [];
    $('messages').innerHTML = '';
    setStatus('');
  });
  $('composer').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = $('input').value.trim();
    if ((!text && !state.attachments.length) || state.controller) return;
    $('input').value = '';
    send(text);
  });
  $('input').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey) {
      ev.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('stop').addEventListener('click', () => { if (state.controller) state.controller.abort(); });
  $('attach').addEventListener('click', () => $('file').click());
  $('file').addEventListener('change', () => { attachFiles($('file').files); $('file').value = ''; });
  $('input').addEventListener('paste', (ev) => {
    const files = [...(ev.clipboardData ? ev.clipboardData.files : [])].filter((f) => f.type.startsWith('image/'));
    if (files.length) { ev.preventDefault(); attachFiles(files); }
  });
  document.addEventListener('dragover', (ev) => { ev.preventDefault(); document.body.classList.add('dropping'); });
  document.addEventListener('dragleave', () => document.body.classList.remove('dropping'));
  document.addEventListener('drop', (ev) => {
    ev.preventDefault();
    document.body.classList.remove('dropping');
    if (ev.dataTransfer && ev.dataTransfer.files.length) attachFiles(ev.dataTransfer.files);
  });
  loadModel();
  $('input').focus();
}

document.addEventListener('DOMContentLoaded', init);
