/**
 * A realistic team configuration document for the push benchmark: 20 agents with system prompts of a few
 * hundred words, chat_ui configuration, events, delegations and traits, plus the team's tools, knowledge
 * and overrides. Deterministic for a given tag, and every component name carries the tag, so pushing a new
 * tag creates everything (push matches agents, tools and traits by name across the whole account).
 */

export const AGENTS_PER_TEAM = 20;
export const TRAITS_PER_TEAM = 6;
export const TOOLS_PER_TEAM = 4;
/** The agent whose system prompt the update scenario changes. */
export const CHANGED_AGENT_INDEX = 7;

/** Deterministic PRNG (same as the integration test's), so documents are reproducible. */
function prng(seed: number) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

const ROLES = ["Triage", "Billing", "Onboarding", "Escalation", "Returns", "Shipping", "Security", "Sales", "Feedback", "Docs"];
const MODELS = ["gpt-4o", "gpt-4o-mini", "claude-sonnet", "llama-3-70b"];
const WORDS = ["order", "invoice", "refund", "account", "password", "shipment", "warranty", "subscription", "upgrade", "outage", "contract", "quote"];

export interface DocumentOptions {
  /** Changes agent CHANGED_AGENT_INDEX's system prompt: a different revision is a one-agent update. */
  revision?: number;
  /** Publishes agent 0 as password_protected with this password (push hashes it on every push). */
  password?: string;
}

/** The team document for `tag` (a short token unique per team within the account). */
export function teamDocument(tag: string, opts: DocumentOptions = {}) {
  const seed = [...tag].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7);
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const sentence = (n: number) => Array.from({ length: n }, () => pick(WORDS)).join(" ");
  const name = `Support ${tag}`;

  const traits = Array.from({ length: TRAITS_PER_TEAM }, (_, i) => ({
    name: `Trait ${tag} ${i}`,
    category: pick(["personality", "communication", "expertise", "general"]),
    description: `Behaves with a focus on ${sentence(6)}.`,
    tags: [pick(WORDS), pick(WORDS)],
  }));
  const tools = Array.from({ length: TOOLS_PER_TEAM }, (_, i) => ({
    name: `Tool ${tag} ${i}`,
    description: `Looks up ${sentence(4)} records.`,
    type: (["mcp", "external", "function", "mcp"] as const)[i]!,
    config: { command: `lookup-${i}`, args: ["--json", "--limit", "20"], env: { REGION: "eu-west-1" }, timeout: 30 },
  }));
  const agentName = (i: number) => `${ROLES[i % ROLES.length]} ${tag} ${i}`;

  const agents = Array.from({ length: AGENTS_PER_TEAM }, (_, i) => {
    const prompt = [
      `You are ${agentName(i)}, a support agent of the ${name} team.`,
      ...Array.from({ length: 12 }, () => `When a customer mentions ${sentence(3)}, check the ${sentence(2)} first and answer in plain words about the ${sentence(4)}.`),
      i === CHANGED_AGENT_INDEX && opts.revision ? `Revision ${opts.revision}.` : "",
    ].join(" ");
    return {
      name: agentName(i),
      description: `Handles ${sentence(5)} questions.`,
      system_prompt: prompt,
      model: pick(MODELS),
      temperature: Math.round(rnd() * 10) / 10,
      max_tokens: 512 + Math.floor(rnd() * 8) * 256,
      image_url: `https://img.example.com/agents/${tag}-${i}.png`,
      publication:
        i === 0 && opts.password
          ? { access_level: "password_protected", chat_uri: `${tag}-agent-${i}`, password: opts.password }
          : { access_level: i % 3 === 0 ? "private" : "public", chat_uri: `${tag}-agent-${i}` },
      configuration: {
        chat_ui: {
          empty_title: `Ask ${ROLES[i % ROLES.length]}`,
          empty_description: `Questions about ${sentence(3)}`,
          greeting: `Hello! I can help with ${sentence(2)}.`,
          suggested_prompts: Array.from({ length: 3 }, (_, j) => ({ title: `Prompt ${j}`, text: `Where is my ${pick(WORDS)}?`, icon: "star" })),
        },
        routing: { priority: i % 4, business_hours_only: i % 2 === 0 },
      },
      events: [
        { type: "email.received", description: "new support mail", enabled: true, config: { mailbox: `support-${i}@example.com` } },
        ...(i % 2 ? [{ type: "ticket.created", description: "new ticket", enabled: i % 4 === 1, config: { queues: ["default", pick(WORDS)] } }] : []),
      ],
      traits: [traits[i % TRAITS_PER_TEAM]!.name, traits[(i + 2) % TRAITS_PER_TEAM]!.name],
      delegations: [
        { to_agent: agentName((i + 1) % AGENTS_PER_TEAM), condition: `about ${pick(WORDS)}`, description: "hand off" },
        ...(i % 3 === 0 ? [{ to_agent: agentName(3), condition: "customer is upset", description: "escalate" }] : []),
      ],
    };
  });

  return {
    name,
    description: `Customer support team ${tag}: ${sentence(10)}.`,
    traits,
    tools,
    knowledge: [
      { name: `Help Center ${tag}`, type: "website", source: "https://help.example.com", processing: { chunk_size: 800, overlap: 100 } },
      { name: `Policies ${tag}`, type: "pdf", source: "https://help.example.com/policies.pdf", processing: { chunk_size: 1200 } },
    ],
    agents,
    overrides: {
      global: { max_tokens: 2048 },
      agent_specific: {
        [agentName(3)]: { temperature: 0.2, system_prompt_suffix: "Always cite the ticket id." },
        [agentName(11)]: { model: "gpt-4o" },
      },
    },
  };
}
