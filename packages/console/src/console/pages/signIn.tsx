// Sign-in: the admin token is sent once; the service answers with an HttpOnly session cookie.
import { useState } from "preact/hooks";
import { signIn } from "../api.ts";
import { ErrorNotice, TextInput, useAction } from "../../shared/ui.tsx";

export function SignIn() {
  const [token, setToken] = useState("");
  const action = useAction();
  return (
    <main class="centered">
      <div class="panel">
        <h1>Paymaster console</h1>
        <p>
          Sign in with an admin token: one of the <code>name=token</code> pairs in the service's <code>PAYMASTER_ADMIN_TOKENS</code>. The
          browser keeps a session cookie (8 hours), never the token.
        </p>
        <ErrorNotice error={action.error} what="Not signed in" />
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void action.run(async () => {
              await signIn(token.trim());
              setToken("");
            });
          }}
        >
          <TextInput label="Admin token" type="password" name="token" value={token} onInput={setToken} autocomplete="current-password" required />
          <button class="primary" type="submit" disabled={action.busy || token.trim() === ""}>
            {action.busy ? "Signing in…" : "Sign in"}
          </button>
        </form>
      </div>
    </main>
  );
}
