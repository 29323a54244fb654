// Where the built pages are: dist/console (the operator console) and dist/apply (the public application page).
import { fileURLToPath } from "node:url";

export const consoleDist = fileURLToPath(new URL("./dist/", import.meta.url));
