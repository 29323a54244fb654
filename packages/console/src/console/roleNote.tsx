// Where a page's actions would be when the session's role does not include them: the page says so instead of
// offering a button the service would refuse (403).
import { useSession } from "./api.ts";

export function RoleNote({ does }: { does: string }) {
  const session = useSession();
  return (
    <p class="muted" data-testid="role-note">
      Your role, <strong>{session?.role}</strong>, does not {does}.
    </p>
  );
}
