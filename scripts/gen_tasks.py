#!/usr/bin/env python3
"""gen_tasks.py — write the TinyStories task sets of `edgellm eval task` from templates.

    python3 scripts/gen_tasks.py [--out data/tasks] [--check]

Writes (deterministic: a fixed seed, so rerunning reproduces the committed files byte for byte;
--check compares instead of writing and exits 1 on a difference):

  tinystories_mc.jsonl   multiple choice, one JSON object per line:
                         {"context": "...", "choices": [" ball", " cup", " kite", " hat"], "label": 0}
                         The choice text is appended verbatim to the context (hence the leading space);
                         `label` indexes the right one. The story makes the answer obvious: the word was
                         said once or twice before (an object, colour, animal, place or name), and the
                         three distractors are words of the same kind that the story never mentions.
  tinystories_gen.jsonl  generation: {"prompt": "...", "answer": "ball"}; the model continues the prompt
                         greedily, scored by exact match (the continuation starts with the answer as a
                         word) and by "contains".

The words are TinyStories vocabulary (simple names, toys, colours, animals, places), ASCII only, so
small vocabularies without byte fallback (babyllama's 105 tokens) encode every character.
"""
import argparse
import json
import os
import random
import sys

SEED = 20240611
N_PER_TEMPLATE = 48   # 5 templates -> 240 items per set

GIRLS = ["Lily", "Sue", "Mia", "Anna", "Lucy", "Amy", "Zoe", "Kate", "Emma", "Sara", "Jane", "Molly"]
BOYS = ["Tom", "Ben", "Max", "Tim", "Sam", "Jack", "Leo", "Bob", "Jake", "Mark", "Joe", "Billy"]
OBJECTS = ["ball", "doll", "kite", "car", "book", "hat", "box", "cup", "toy", "bike", "drum", "boat",
           "train", "spoon", "sock", "bag"]
ADJ = ["big", "little", "new", "shiny", "soft", "old", "small", "pretty"]
COLORS = ["red", "blue", "green", "yellow", "pink", "purple", "orange", "brown"]
ANIMALS = ["cat", "dog", "bird", "fish", "frog", "bunny", "duck", "bear", "lion", "mouse", "horse",
           "cow", "pig", "fox", "owl", "sheep"]
PLACES = ["park", "beach", "zoo", "farm", "garden", "forest", "store", "school", "lake", "pond"]
ACTS = ["run", "sing", "dance", "jump", "play", "draw", "swim", "read"]


def a(word):
    """The indefinite article for word: "an orange", "a red"."""
    return ("an " if word[0] in "aeiou" else "a ") + word


def person(rng):
    if rng.random() < 0.5:
        return rng.choice(GIRLS), "She", "she", "her", GIRLS
    return rng.choice(BOYS), "He", "he", "his", BOYS


def others(rng, pool, keep, n=3):
    return rng.sample([w for w in pool if w not in keep], n)


def mc_object(rng):
    name, Pr, pr, poss, _ = person(rng)
    obj, adj = rng.choice(OBJECTS), rng.choice(ADJ)
    ctx = (f"{name} had {a(adj)} {obj}. {Pr} loved {poss} {obj} very much. "
           f"Every day, {name} played with {poss} {adj}")
    return ctx, obj, others(rng, OBJECTS, {obj})


def mc_color(rng):
    name, Pr, pr, poss, _ = person(rng)
    obj, color = rng.choice(OBJECTS), rng.choice(COLORS)
    ctx = (f"{name} had {a(color)} {obj}. It was a very pretty {color} {obj}. "
           f"{name} showed the {obj} to {poss} mom. \"Look at my")
    return ctx, color, others(rng, COLORS, {color})


def mc_animal(rng):
    name = rng.choice(GIRLS + BOYS)
    animal, place = rng.choice(ANIMALS), rng.choice(PLACES)
    ctx = (f"Once upon a time, there was a little {animal} named {name}. The {animal} lived near the {place}. "
           f"Every morning, {name} the")
    return ctx, animal, others(rng, ANIMALS, {animal})


def mc_place(rng):
    name, Pr, pr, poss, _ = person(rng)
    place = rng.choice(PLACES)
    ctx = (f"One day, {name} went to the {place} with {poss} mom. {Pr} had so much fun at the {place}. "
           f"{name} did not want to leave the")
    return ctx, place, others(rng, PLACES, {place})


def mc_name(rng):
    name, Pr, pr, poss, pool = person(rng)
    act = rng.choice(ACTS)
    ctx = (f"Once upon a time, there was a kid named {name}. {name} loved to {act}. "
           f"One day, {pr} wanted to {act} with a friend. \"Can I {act} with you?\" asked")
    return ctx, name, others(rng, pool, {name})


def gen_object(rng):
    name, Pr, pr, poss, _ = person(rng)
    obj, adj = rng.choice(OBJECTS), rng.choice(ADJ)
    return (f"{name} had {a(adj)} {obj}. {name} loved the {obj}. One day, {name} lost the"), obj


def gen_animal(rng):
    name = rng.choice(GIRLS + BOYS)
    animal = rng.choice(ANIMALS)
    return (f"Once upon a time, there was {a(animal)} named {name}. {name} was a happy {animal}. "
            f"Every day, the"), animal


def gen_place(rng):
    name, Pr, pr, poss, _ = person(rng)
    place = rng.choice(PLACES)
    return (f"{name} and {poss} friend went to the {place}. They played at the {place} all day. "
            f"When the sun went down, they left the"), place


def gen_color(rng):
    name, Pr, pr, poss, _ = person(rng)
    obj, color = rng.choice(OBJECTS), rng.choice(COLORS)
    return (f"{name} had {a(color)} {obj}. {Pr} liked {color} things the most. "
            f"{poss.capitalize()} favorite color was"), color


def gen_name(rng):
    name, Pr, pr, poss, _ = person(rng)
    act = rng.choice(ACTS)
    return (f"There was a kid named {name}. {name} liked to {act}. Every day,"), name


def build(rng, makers, item):
    seen, out = set(), []
    for make in makers:
        n = 0
        while n < N_PER_TEMPLATE:
            it = item(rng, make)
            key = json.dumps(it, sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            out.append(it)
            n += 1
    rng.shuffle(out)
    return out


def mc_item(rng, make):
    ctx, right, wrong = make(rng)
    choices = [" " + w for w in wrong]
    label = rng.randrange(4)
    choices.insert(label, " " + right)
    return {"context": ctx, "choices": choices, "label": label}


def gen_item(rng, make):
    prompt, answer = make(rng)
    return {"prompt": prompt, "answer": answer}


def render(items):
    return "".join(json.dumps(it, ensure_ascii=True) + "\n" for it in items)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "tasks"))
    ap.add_argument("--check", action="store_true", help="compare with the files instead of writing")
    a = ap.parse_args()
    rng = random.Random(SEED)
    files = {
        "tinystories_mc.jsonl": render(build(rng, [mc_object, mc_color, mc_animal, mc_place, mc_name], mc_item)),
        "tinystories_gen.jsonl": render(build(rng, [gen_object, gen_animal, gen_place, gen_color, gen_name], gen_item)),
    }
    bad = 0
    for name, text in files.items():
        path = os.path.join(a.out, name)
        if a.check:
            try:
                same = open(path, encoding="utf-8").read() == text
            except OSError:
                same = False
            if not same:
                print(f"{path}: differs from the generator's output", file=sys.stderr)
                bad = 1
        else:
            os.makedirs(a.out, exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {path}: {text.count(chr(10))} items")
    return bad


if __name__ == "__main__":
    sys.exit(main())
