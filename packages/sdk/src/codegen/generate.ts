import { loadOpenApiDocuments, type ServiceName } from './openapi.ts';
import { renderModule } from './render.ts';

/** Where each generated module lives, relative to packages/sdk/src. */
export const GENERATED_FILES: Record<ServiceName, string> = {
  observe: 'generated/observe.ts',
  gate: 'generated/gate.ts',
};

/** The generated modules, by path relative to packages/sdk/src, rendered from the documents the services serve now. */
export async function generateSources(): Promise<Record<string, string>> {
  const documents = await loadOpenApiDocuments();
  const sources: Record<string, string> = {};
  for (const service of Object.keys(GENERATED_FILES) as ServiceName[]) {
    sources[GENERATED_FILES[service]] = renderModule(documents[service], service);
  }
  return sources;
}
