/** Projects: create, list, show (with keys and strategies), disable / enable. */
import { audit, guarded, invalid, notFound, type AdminContext, mutation, read } from "./context.ts";
import { keyView, projectView, strategyView } from "./views.ts";

export const createProject = mutation("operator", async function createProject(ctx: AdminContext, input: { name: unknown }) {
  if (typeof input.name !== "string" || input.name.trim() === "") invalid("name: a project needs a non-empty name");
  const project = projectView(await guarded(() => ctx.store.createProject(input.name as string)));
  await audit(ctx, "project.create", project.id, null, project);
  return project;
});

export const listProjects = read("viewer", async function listProjects(ctx: AdminContext) {
  return (await ctx.store.listProjects()).map(projectView);
});

export const showProject = read("viewer", async function showProject(ctx: AdminContext, id: string) {
  const project = await ctx.store.getProject(id);
  if (!project) notFound(`project ${JSON.stringify(id)} not found`);
  return {
    ...projectView(project),
    keys: (await ctx.store.listApiKeys(id)).map(keyView),
    strategies: (await ctx.store.listStrategies(id)).map(strategyView),
  };
});

export const setProjectStatus = mutation("operator", async function setProjectStatus(ctx: AdminContext, id: string, status: "active" | "disabled") {
  const before = await ctx.store.getProject(id);
  if (!before) notFound(`project ${JSON.stringify(id)} not found`);
  await guarded(() => ctx.store.setProjectStatus(id, status));
  const after = { ...projectView(before), status };
  await audit(ctx, status === "disabled" ? "project.disable" : "project.enable", id, projectView(before), after);
  return after;
});
