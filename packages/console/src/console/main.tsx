// The operator console: sign in with an admin token, then every page reads and changes the paymaster through
// the admin API only (api.ts). Hash routes (#/overview, #/strategies/CODE, …): the service serves one page.
import "../shared/styles.css";
import { render } from "preact";
import { useEffect } from "preact/hooks";
import { loadSession, signOut, useSession } from "./api.ts";
import { href, Loading, useRoute } from "../shared/ui.tsx";
import { SignIn } from "./pages/signIn.tsx";
import { Overview } from "./pages/overview.tsx";
import { ProjectPage, Projects } from "./pages/projects.tsx";
import { Applications } from "./pages/applications.tsx";
import { Strategies, StrategyPage } from "./pages/strategies.tsx";
import { Sponsorship, Sponsorships } from "./pages/sponsorships.tsx";
import { Tank, Tanks } from "./pages/tanks.tsx";
import { Billing, ProjectBilling } from "./pages/billing.tsx";
import { Webhooks } from "./pages/webhooks.tsx";
import { Audit } from "./pages/audit.tsx";

const NAV: [string, string][] = [
  ["/overview", "Overview"],
  ["/projects", "Projects & keys"],
  ["/applications", "Key applications"],
  ["/strategies", "Strategies"],
  ["/sponsorships", "Sponsorships"],
  ["/tanks", "Gas tanks"],
  ["/billing", "Billing"],
  ["/webhooks", "Webhooks"],
  ["/audit", "Audit log"],
];

function Page({ path }: { path: string }) {
  const parts = path.split("?")[0]!.split("/").filter(Boolean).map(decodeURIComponent);
  switch (parts[0]) {
    case "projects":
      return parts[1] ? <ProjectPage id={parts[1]} /> : <Projects />;
    case "applications":
      return <Applications />;
    case "strategies":
      return parts[1] ? <StrategyPage code={parts[1] === "new" ? null : parts[1]} /> : <Strategies />;
    case "sponsorships":
      return parts[1] ? <Sponsorship id={parts[1]} /> : <Sponsorships />;
    case "tanks":
      return parts[1] && parts[2] ? <Tank network={parts[1]} sender={parts[2]} /> : <Tanks />;
    case "billing":
      return parts[1] ? <ProjectBilling id={parts[1]} /> : <Billing />;
    case "webhooks":
      return <Webhooks />;
    case "audit":
      return <Audit />;
    default:
      return <Overview />;
  }
}

function App() {
  const session = useSession();
  const path = useRoute();
  useEffect(() => {
    void loadSession();
  }, []);
  useEffect(() => {
    const title = NAV.find(([p]) => path.startsWith(p))?.[1];
    document.title = `${title ? `${title} · ` : ""}Paymaster console`;
  }, [path]);
  if (session === undefined) return <main class="centered"><Loading what="the console" /></main>;
  if (session === null) return <SignIn />;
  const section = `/${path.split("?")[0]!.split("/")[1] ?? "overview"}`;
  return (
    <div class="app">
      <a class="skip-link" href="#main" onClick={(e) => { e.preventDefault(); document.getElementById("main")?.focus(); }}>
        Skip to the content
      </a>
      <header class="topbar">
        <a class="brand" href={href("/overview")}>Paymaster console</a>
        <span class="who">Signed in as <strong>{session.name}</strong> <span class="role" title="What this session may do: viewer reads; operator also changes projects, keys, strategies, applications and webhooks; admin also gas tanks and tokens">({session.role})</span></span>
        <button type="button" class="small" onClick={() => void signOut()}>Sign out</button>
      </header>
      <div class="shell">
        <nav class="nav" aria-label="Console sections">
          <ul>
            {NAV.map(([p, text]) => (
              <li key={p}>
                <a href={href(p)} aria-current={section === p ? "page" : undefined}>{text}</a>
              </li>
            ))}
          </ul>
        </nav>
        <main id="main" tabIndex={-1}>
          <Page key={path} path={path} />
        </main>
      </div>
    </div>
  );
}

render(<App />, document.getElementById("app")!);
