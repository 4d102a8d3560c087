#include "actors/gateway/chat_page.hpp"

namespace hive::gateway {

// Plain HTML, CSS and script, no external files: the page works offline.
// ?prompt=TEXT sends a first turn as soon as the socket opens.
// Replies stream through one WebSocket (/v1/stream, docs/websocket.md); the
// whole conversation goes with each turn, through the model's chat template.
const std::string& chat_page() {
  static const std::string page = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Hive chat</title>
<style>
  body { font-family: system-ui, sans-serif; margin: 0; background: #f6f6f4; color: #222; }
  header { padding: 12px 20px; background: #2b2b2b; color: #f3c623; font-weight: 600; }
  header span { color: #bbb; font-weight: 400; margin-left: 8px; }
  #log { max-width: 760px; margin: 0 auto; padding: 16px 20px 120px; }
  .turn { white-space: pre-wrap; padding: 10px 14px; border-radius: 10px; margin: 10px 0; }
  .user { background: #dfe9f7; margin-left: 60px; }
  .assistant { background: #fff; border: 1px solid #e2e2dc; margin-right: 60px; }
  .error { background: #fbe3e3; }
  form { position: fixed; bottom: 0; left: 0; right: 0; background: #f6f6f4;
         border-top: 1px solid #ddd; padding: 12px 20px; }
  .row { max-width: 760px; margin: 0 auto; display: flex; gap: 8px; }
  #prompt { flex: 1; padding: 10px; font-size: 15px; }
  #status { max-width: 760px; margin: 4px auto 0; color: #777; font-size: 12px; }
</style>
</head>
<body>
<header>Hive <span id="model"></span></header>
<div id="log"></div>
<form id="form">
  <div class="row">
    <input id="prompt" autocomplete="off" placeholder="Say something" autofocus>
    <button id="send" type="submit">Send</button>
    <button id="stop" type="button" disabled>Stop</button>
  </div>
  <div id="status">connecting...</div>
</form>
<script>
const log = document.getElementById('log');
const status = document.getElementById('status');
const history = [];
let socket = null, current = null, turns = 0;

function bubble(role, text) {
  const div = document.createElement('div');
  div.className = 'turn ' + role;
  div.textContent = text;
  log.appendChild(div);
  window.scrollTo(0, document.body.scrollHeight);
  return div;
}

function connect() {
  const key = new URLSearchParams(location.search).get('api_key');
  const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host +
              '/v1/stream' + (key ? '?api_key=' + encodeURIComponent(key) : '');
  socket = new WebSocket(url);
  socket.onopen = () => {
    status.textContent = 'connected';
    // ?prompt=... sends a first turn at once (a link to a started chat).
    const first = new URLSearchParams(location.search).get('prompt');
    if (first) {
      document.getElementById('prompt').value = first;
      document.getElementById('form').requestSubmit();
    }
  };
  socket.onclose = () => { status.textContent = 'disconnected; reload to reconnect'; };
  socket.onmessage = (message) => {
    const event = JSON.parse(message.data);
    if (!current || event.id !== current.id) return;
    if (event.type === 'token') {
      current.text += event.text;
      current.div.textContent = current.text;
      window.scrollTo(0, document.body.scrollHeight);
    } else if (event.type === 'done') {
      history.push({role: 'assistant', content: current.text});
      status.textContent = event.usage.completion_tokens + ' tokens, ' +
                           event.finish_reasons.join(', ');
      finish();
    } else if (event.type === 'error') {
      current.div.className = 'turn assistant error';
      current.div.textContent = current.text + '\n[' + event.message + ']';
      history.pop();
      finish();
    }
  };
}

function finish() {
  current = null;
  document.getElementById('send').disabled = false;
  document.getElementById('stop').disabled = true;
}

document.getElementById('form').onsubmit = (e) => {
  e.preventDefault();
  const input = document.getElementById('prompt');
  const text = input.value.trim();
  if (!text || current || !socket || socket.readyState !== WebSocket.OPEN) return;
  input.value = '';
  bubble('user', text);
  history.push({role: 'user', content: text});
  current = {id: 'turn-' + (++turns), text: '', div: bubble('assistant', '')};
  document.getElementById('send').disabled = true;
  document.getElementById('stop').disabled = false;
  status.textContent = 'generating...';
  socket.send(JSON.stringify({type: 'start', id: current.id, messages: history,
                              max_tokens: 256, temperature: 0.8, top_p: 0.95}));
};

document.getElementById('stop').onclick = () => {
  if (current) socket.send(JSON.stringify({type: 'cancel', id: current.id}));
};

const pageKey = new URLSearchParams(location.search).get('api_key');
fetch('/v1/models', {headers: pageKey ? {Authorization: 'Bearer ' + pageKey} : {}})
  .then(r => r.json())
  .then(m => { document.getElementById('model').textContent = m.data[0].id; })
  .catch(() => {});
connect();
</script>
</body>
</html>
)html";
  return page;
}

}  // namespace hive::gateway
