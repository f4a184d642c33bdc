/**
 * Client-side load-balancing policies (docs/protocol.md §10): which candidate a
 * new session tries first. The next ones follow in order, each once.
 */
import { InvalidRequestError } from "./errors";

export interface LoadBalancingPolicy {
  /** Index of the first of `count` candidates to try. */
  select(count: number): number;
}

export class RoundRobinPolicy implements LoadBalancingPolicy {
  private next = -1;
  select(count: number): number {
    if (this.next < 0) this.next = Math.floor(Math.random() * count);
    const i = this.next % count;
    this.next = i + 1;
    return i;
  }
}

export class RandomPolicy implements LoadBalancingPolicy {
  select(count: number): number { return Math.floor(Math.random() * count); }
}

export class RandomStickyPolicy implements LoadBalancingPolicy {
  private pick = -1;
  select(count: number): number {
    if (this.pick < 0 || this.pick >= count) this.pick = Math.floor(Math.random() * count);
    return this.pick;
  }
}

export class FirstElementPolicy implements LoadBalancingPolicy {
  select(_count: number): number { return 0; }
}

const POLICIES: Record<string, new () => LoadBalancingPolicy> = {
  RoundRobin: RoundRobinPolicy,
  Random: RandomPolicy,
  RandomSticky: RandomStickyPolicy,
  FirstElement: FirstElementPolicy,
};

/** A policy by name: `RoundRobin`, `Random`, `RandomSticky`, `FirstElement`, or Artemis's class names. */
export function policyFromName(name: string): LoadBalancingPolicy {
  let short = name.split(".").pop() ?? name;
  if (short.endsWith("ConnectionLoadBalancingPolicy")) short = short.slice(0, -"ConnectionLoadBalancingPolicy".length);
  const cls = POLICIES[short];
  if (!cls) {
    throw new InvalidRequestError(
      `unknown connectionLoadBalancingPolicyClassName ${JSON.stringify(name)}; expected one of ${Object.keys(POLICIES).join(", ")}`);
  }
  return new cls();
}

/** The candidates in the order a new session tries them: the policy's pick first, then the rest in order. */
export function orderCandidates<T>(items: T[], policy: LoadBalancingPolicy): T[] {
  if (items.length === 0) return [];
  const first = policy.select(items.length);
  return [...items.slice(first), ...items.slice(0, first)];
}
