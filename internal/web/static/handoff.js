// handoff.js: "Use another device" (issue 55). The waiting page's button
// asks the line for a link that carries this session's place to another
// device (POST entries/me/handoff: single use, 5 minutes), and shows it as
// the QR code the server drew (an <img> of a data: URL: the page's
// Content-Security-Policy allows data: images, and no markup from an
// answer is ever put in the page), as text, and with a copy button.
//
// While a link is out (window.waitroomHandoff.until), waiting.js asks its
// instance rather than the front document, a few seconds apart and with no
// ticket shown, so the claim shows here as MOVED within seconds; it stops
// at MOVED, or when the link expires. The two scripts talk through that
// object and two events: 'waitroom:state' (waiting.js shows a state) and
// 'waitroom:handoff' (a link was made).
(() => {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const root = $('waitroom');
  const box = $('handoff');
  if (!root || !box) return; // an operator's template without the block
  let M = {};
  try { M = JSON.parse($('waitroom-texts').textContent); } catch { /* keys stand in */ }
  const t = (key) => M[key] ?? key;
  const url = (root.dataset.base || '') + '/api/v1/queues/' + encodeURIComponent(root.dataset.queue) + '/entries/me/handoff';

  // The states in which the visitor holds a place that can move.
  const holding = new Set(['waiting', 'opening', 'ready', 'soldout']);
  const out = { until: 0 }; // when the link made last expires (ms, this page's clock); 0: none out
  window.waitroomHandoff = out;
  let expiry = 0;

  function say(key) {
    $('handoff-message').textContent = key ? t(key) : '';
  }

  // hide takes the link off the screen; it still works until it expires,
  // so the page goes on watching for its claim (out.until stays).
  function hide() {
    $('handoff-panel').hidden = true;
    $('handoff-button').hidden = false;
  }

  // over: the link is gone (expired, or this page no longer holds a place).
  function over(key) {
    clearTimeout(expiry);
    out.until = 0;
    hide();
    $('handoff-qr').removeAttribute('src');
    $('handoff-url').value = '';
    say(key);
  }

  document.addEventListener('waitroom:state', (e) => {
    const has = holding.has(e.detail);
    box.hidden = !has;
    if (!has && out.until) over('');
  });

  // serverNow is the server's clock when it answered (its Date header), so
  // the link's expiry counts down right on a device with a wrong clock.
  function serverNow(res) {
    const d = Date.parse(res.headers.get('Date') || '');
    return Number.isFinite(d) ? d : Date.now();
  }

  $('handoff-button').addEventListener('click', async () => {
    const button = $('handoff-button');
    button.disabled = true;
    say('');
    let res = null;
    let body = {};
    try {
      res = await fetch(url, { method: 'POST', credentials: 'same-origin', cache: 'no-store', headers: { Accept: 'application/json' } });
      body = await res.json().catch(() => ({}));
    } catch { /* said below */ }
    button.disabled = false;
    if (!res || !res.ok) return say(body.error?.code === 'handoff_not_needed' ? 'handoffNotNeeded' : 'handoffFailed');
    const left = Date.parse(body.expiresAt) - serverNow(res);
    out.until = Date.now() + Math.max(0, left);
    $('handoff-qr').src = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(body.qrSvg);
    $('handoff-url').value = body.url;
    $('handoff-panel').hidden = false;
    button.hidden = true;
    $('handoff-heading').focus();
    clearTimeout(expiry);
    expiry = setTimeout(() => over('handoffExpired'), Math.max(0, left));
    document.dispatchEvent(new CustomEvent('waitroom:handoff'));
  });

  $('handoff-copy').addEventListener('click', async () => {
    const input = $('handoff-url');
    try {
      await navigator.clipboard.writeText(input.value);
    } catch {
      input.select(); // no clipboard here (a page not on HTTPS): selected for the visitor to copy
      return;
    }
    say('handoffCopied');
  });

  $('handoff-close').addEventListener('click', hide);
})();
