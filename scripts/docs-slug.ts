/**
 * A heading's anchor as GitHub makes it (github-slugger: lower case, every character but letters,
 * marks, digits, connector punctuation, spaces and hyphens dropped, spaces as hyphens). The docs
 * site uses it too (docs/.vitepress/config.mjs), so `deploy.md#disk-space` and `audit.md#--deep`
 * reach the same heading on GitHub and on the site.
 */
export function githubSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}
