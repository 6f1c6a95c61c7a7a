// The passkey forms' script (enrolment on the security page, "Use a passkey" at the second
// step), served by payd itself (the pages' CSP: script-src 'self', no inline script). It is
// the WebAuthn glue and nothing else, written by hand rather than bundled from
// @simplewebauthn/browser: the options come from the form's inert JSON element (made by
// @simplewebauthn/server), their base64url fields become bytes for
// navigator.credentials.create()/get(), the answer's bytes become base64url again in the
// JSON the server library verifies, posted as the form's `credential` field. It writes
// only text (textContent), reads nothing from the address, and the server checks all of it.
export const PASSKEY_SCRIPT_PATH = '/oauth/passkey.js';

export const PASSKEY_SCRIPT = `(function () {
  'use strict';
  function toBuf(s) {
    s = s.replace(/-/g, '+').replace(/_/g, '/');
    while (s.length % 4) s += '=';
    var bin = atob(s), a = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) a[i] = bin.charCodeAt(i);
    return a.buffer;
  }
  function toB64u(buf) {
    var a = new Uint8Array(buf), s = '';
    for (var i = 0; i < a.length; i++) s += String.fromCharCode(a[i]);
    return btoa(s).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  }
  function creds(list) {
    return (list || []).map(function (c) { return { type: c.type, id: toBuf(c.id), transports: c.transports }; });
  }
  function publicKey(kind, o) {
    var p = Object.assign({}, o, { challenge: toBuf(o.challenge) });
    if (kind === 'create') {
      p.user = Object.assign({}, o.user, { id: toBuf(o.user.id) });
      p.excludeCredentials = creds(o.excludeCredentials);
    } else {
      p.allowCredentials = creds(o.allowCredentials);
    }
    return p;
  }
  function answer(kind, c) {
    var r = c.response;
    var out = {
      id: c.id, rawId: toB64u(c.rawId), type: c.type,
      clientExtensionResults: c.getClientExtensionResults ? c.getClientExtensionResults() : {},
      authenticatorAttachment: c.authenticatorAttachment || undefined,
      response: { clientDataJSON: toB64u(r.clientDataJSON) }
    };
    if (kind === 'create') {
      out.response.attestationObject = toB64u(r.attestationObject);
      out.response.transports = r.getTransports ? r.getTransports() : [];
    } else {
      out.response.authenticatorData = toB64u(r.authenticatorData);
      out.response.signature = toB64u(r.signature);
      if (r.userHandle) out.response.userHandle = toB64u(r.userHandle);
    }
    return JSON.stringify(out);
  }
  Array.prototype.forEach.call(document.querySelectorAll('form[data-payd-passkey]'), function (form) {
    var kind = form.getAttribute('data-payd-passkey');
    var error = form.querySelector('[data-payd-passkey-error]');
    var button = form.querySelector('button[type=submit]');
    function fail(message) {
      error.textContent = message;
      error.hidden = false;
      button.disabled = false;
    }
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      if (!window.PublicKeyCredential || !navigator.credentials) return fail('This browser cannot use passkeys here.');
      var o = JSON.parse(form.querySelector('[data-payd-passkey-options]').textContent);
      button.disabled = true;
      error.hidden = true;
      var call = kind === 'create' ? navigator.credentials.create({ publicKey: publicKey(kind, o) }) : navigator.credentials.get({ publicKey: publicKey(kind, o) });
      call.then(function (c) {
        if (!c) return fail('No passkey was used. Try again.');
        form.querySelector('input[name=credential]').value = answer(kind, c);
        form.submit();
      }, function (e) {
        fail(e && e.name === 'NotAllowedError' ? 'The passkey was not used (cancelled or timed out). Try again.' : 'The passkey did not work' + (e && e.message ? ': ' + e.message : '') + '.');
      });
    });
  });
})();
`;
