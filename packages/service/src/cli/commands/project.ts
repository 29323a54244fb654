/** paymaster project create|list|show|disable|enable */
import type { Command } from "commander";
import { createProject, listProjects, setProjectStatus, showProject } from "../../admin/projects.ts";
import { record, table } from "../output.ts";
import type { Run } from "../run.ts";

export function registerProject(program: Command, run: Run): void {
  const project = program.command("project").description("Projects: the owners of API keys and strategies");
  project
    .command("create")
    .description("create a project")
    .argument("<name>", "the project's name")
    .action((name: string) => run(async (ctx, out) => out.print(await createProject(ctx, { name }), record)));
  project
    .command("list")
    .description("list projects")
    .action(() => run(async (ctx, out) => out.print(await listProjects(ctx), (rows) => table(rows))));
  project
    .command("show")
    .description("a project with its keys and strategies")
    .argument("<id>", "the project's id")
    .action((id: string) =>
      run(async (ctx, out) =>
        out.print(await showProject(ctx, id), (p) =>
          [
            record({ id: p.id, name: p.name, status: p.status, createdAt: p.createdAt }),
            "",
            "Keys:",
            table(p.keys, ["id", "prefix", "label", "status", "createdAt"]),
            "",
            "Strategies:",
            table(p.strategies, ["code", "name", "status", "networks"]),
          ].join("\n"),
        ),
      ),
    );
  project
    .command("disable")
    .description("disable a project: its keys are refused until it is enabled again")
    .argument("<id>", "the project's id")
    .action((id: string) => run(async (ctx, out) => out.print(await setProjectStatus(ctx, id, "disabled"), record)));
  project
    .command("enable")
    .description("enable a disabled project")
    .argument("<id>", "the project's id")
    .action((id: string) => run(async (ctx, out) => out.print(await setProjectStatus(ctx, id, "active"), record)));
}
