// A real OpenID Connect provider for the tests (the npm package
// oidc-provider, installed by scripts/oidc-provider.sh): the issuer of the
// browser sign-in tests, with
//   - one client, acs-test / acs-test-secret, a native application whose
//     redirect URI is http://127.0.0.1/login/oidc/callback on any port
//     (RFC 8252 loopback), so every test's `acs serve` may use it;
//   - devInteractions: its sign-in page takes any login name and password;
//     the account is that name, with e-mail <name>@example.com, verified
//     unless the name starts with "unverified";
//   - consent granted without asking (openid email profile), and the
//     e-mail claims in the ID token.
// Usage: node oidc-provider.mjs <port>; it prints "ready <issuer>" once
// listening on 127.0.0.1.
import Provider from "oidc-provider";

const port = Number(process.argv[2] || 18020);
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: "acs-test",
    client_secret: "acs-test-secret",
    application_type: "native",
    redirect_uris: ["http://127.0.0.1/login/oidc/callback"],
    grant_types: ["authorization_code"],
    response_types: ["code"],
  }],
  claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  cookies: { keys: ["acs-test-only-cookie-key"] },
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, id) {
    return {
      accountId: id,
      async claims() {
        return { sub: id, email: `${id}@example.com`, email_verified: !id.startsWith("unverified"), name: id };
      },
    };
  },
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) {
      return ctx.oidc.provider.Grant.find(grantId);
    }
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope("openid email profile");
    await grant.save();
    return grant;
  },
});

provider.listen(port, "127.0.0.1", () => {
  console.log(`ready ${issuer}`);
});
