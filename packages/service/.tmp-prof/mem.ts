import { openStore } from "../src/store/index.ts";
const s = openStore({ databasePath: ":memory:" });
const p = await s.createProject("m"); console.log((await s.getProject(p.id))?.name); await s.close();
