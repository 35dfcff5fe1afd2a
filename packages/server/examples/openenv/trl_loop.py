"""A TRL-style GRPO loop driving Karotte tasks through `karotte serve`'s OpenEnv endpoint.

The environment class has the shape TRL's ``environment_factory`` takes (a no-argument
constructor, ``reset(**dataset_columns)`` returning the prompt, public methods as the model's
tools with their ``Args:`` docstrings), and the reward function reads each environment's
reward, which Karotte's grader gave in its own sandbox after the episode was collected: nothing
the model's commands write can become it. The policy here replays scripted assistant messages
(a JSON file), standing in for the model a trainer samples from; the rest is what a trainer runs.

    python3 trl_loop.py --url http://127.0.0.1:8765/openenv/<token> --task quarterly-revenue \\
        --seed 1234 --group-size 4 --policy control.json

prints one JSON line per rollout and one per group (rewards, GRPO advantages).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from openenv_ws import OpenEnvClient  # noqa: E402


class KarotteEnv:
    """One Karotte episode per reset, over one OpenEnv WebSocket (TRL's environment_factory shape)."""

    url = os.environ.get("KAROTTE_OPENENV_URL", "")

    def __init__(self) -> None:
        self.client = OpenEnvClient(self.url)
        self.reward: Optional[float] = None
        self.result: Optional[Dict[str, Any]] = None
        self.tools: List[Dict[str, Any]] = []
        self.fingerprint: Optional[str] = None

    def reset(self, task_id: str, seed: int) -> str:
        """Start an episode of ``task_id`` from ``seed``; returns the task's instructions."""
        first = self.client.reset(taskId=task_id, seed=seed)
        self.reward, self.result = None, None
        self.tools = first.observation["tools"]
        self.fingerprint = first.observation["metadata"]["worldFingerprint"]
        self.messages = list(first.observation["messages"])
        return self.messages[-1]["content"]

    def bash(self, command: str) -> str:
        """Run a shell command in the task's working directory, as the student.

        Args:
            command: The command line to run with bash.
        """
        answer = self.client.step({"type": "call_tool", "tool_name": "bash", "arguments": {"command": command}})
        return answer.observation["toolMessages"][0]["content"]

    def step_message(self, message: Dict[str, Any]) -> Any:
        """Send one whole assistant message (its tool calls run in order); the observation."""
        answer = self.client.step({"message": message})
        if answer.done:
            self.reward = answer.reward
            self.result = answer.observation["metadata"]["result"]
        return answer

    def finish(self, final_text: str) -> Optional[float]:
        """End the episode with the model's last message: collected, graded, the reward."""
        if self.result is None:
            self.step_message({"role": "assistant", "content": final_text})
        return self.reward

    def close(self) -> None:
        self.client.close()


def karotte_reward(environments: List[KarotteEnv], **kwargs: Any) -> List[Optional[float]]:
    """TRL reward function: the grader's reward, or None (masked) when the episode was an infra failure."""
    return [env.reward if env.result is not None and env.result["trainable"] else None for env in environments]


def rollout(env: KarotteEnv, task_id: str, seed: int, policy: List[Dict[str, Any]]) -> Dict[str, Any]:
    env.reset(task_id, seed)
    for message in policy:  # the model's turns; a trainer samples each from the conversation
        answer = env.step_message(message)
        if answer.done:
            break
    env.finish("done")
    return {"fingerprint": env.fingerprint, "reward": env.reward, "status": env.result["status"]}


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--task", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--policy", required=True, help="a JSON file of assistant messages")
    args = parser.parse_args(argv)
    KarotteEnv.url = args.url
    with open(args.policy, encoding="utf-8") as f:
        policy = json.load(f)
    environments = [KarotteEnv() for _ in range(args.group_size)]
    try:
        rollouts = [rollout(env, args.task, args.seed, policy) for env in environments]
        rewards = karotte_reward(environments)
    finally:
        for env in environments:
            env.close()
    for r in rollouts:
        print(json.dumps({"rollout": r}))
    kept = [r for r in rewards if r is not None]
    mean = statistics.fmean(kept) if kept else 0.0
    spread = statistics.pstdev(kept) if len(kept) > 1 else 0.0
    advantages = [None if r is None else (r - mean) / (spread + 1e-4) for r in rewards]
    fingerprints = {r["fingerprint"] for r in rollouts}
    print(json.dumps({"group": {"rewards": rewards, "advantages": advantages, "coherent": len(fingerprints) == 1}}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
