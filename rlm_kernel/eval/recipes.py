"""Questions about recipes: a recipe site's schema.org ``Recipe`` records as a list of dicts
(``dev``) or a notes app's folder of Markdown recipe notes as a dict of file name to text
(``test``).

What a notebook holds when someone plans meals or a shopping list: recipes with their ingredient
lines, times, servings, ratings and steps. Ingredients whose names extend or share another's stand
beside each other (``butter`` and ``butter beans``, ``shredded mozzarella`` and ``fresh
mozzarella``), and so do titles (``Banana Bread`` and ``Easy Banana Bread``). Recipes are added
until the indented JSON (or the notes) is about the length asked for. Kinds of question:

- ``count``: how many recipes list one exact ingredient (``dev``), or how many recipes with one tag
  take less than some minutes of prep and cooking (``test``);
- ``total``: the grams of one ingredient the recipes of one category call for (``dev``), or the
  ounces of one ingredient over one cuisine's recipes (``test``);
- ``top``: the recipe of one cuisine rated by the most people (``dev``), or the recipe with one tag
  that has the most ingredient lines (``test``) (a clear leader);
- ``lookup``: one recipe's total time in minutes (``dev``), or the ounces of one ingredient in one
  recipe (``test``);
- ``hop``: who wrote the category's recipe with the most calories (``dev``), or the cuisine of the
  recipe that uses the most of one ingredient (``test``).

Every answer is computed from the recipes the generator wrote. Score: ``exact`` (numbers as
numbers, names without case).

Splits: ``dev`` is a British site's JSON-LD (``name``, ``author``, ``recipeYield``, ISO 8601
``prepTime``, ``cookTime`` and ``totalTime``, ``recipeCategory``, ``recipeCuisine``,
``recipeIngredient`` lines such as ``400g spaghetti`` or ``½ tsp ground cumin``, ``HowToStep``
instructions, ``nutrition.calories`` as text, ``aggregateRating``); ``test`` is a folder of notes
(YAML front matter with ``servings``, ``prep`` and ``cook`` in minutes, ``cuisine``, ``tags`` and
``rating``, then ingredient and direction lists in US measures, and notes that may name other
ingredients): other containers, fields, dishes, measures and wording.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup", "hop")

# title, category (dev) or tags (test), cuisine, prep and cook minutes, calories (dev),
# ingredients as ``name[|plural]/unit/amount a serving[/note]`` separated by ``;``
_DEV_DISHES = (
    ("Spaghetti Bolognese", "Dinner", "Italian", 15, 60, 560,
     "olive oil/tbsp/0.5;onion|onions//0.25/finely chopped;garlic clove|garlic cloves//0.5/crushed;"
     "beef mince/g/125;chopped tomatoes/g/100;tomato purée/tbsp/0.5;beef stock/ml/60;spaghetti/g/100;"
     "parmesan/g/10/grated"),
    ("Chicken Tikka Masala", "Dinner", "Indian", 20, 35, 520,
     "chicken thighs/g/150/cut into chunks;natural yogurt/g/40;tikka masala paste/tbsp/0.75;"
     "vegetable oil/tbsp/0.5;onion|onions//0.25/sliced;garlic clove|garlic cloves//0.5/grated;"
     "chopped tomatoes/g/100;double cream/ml/35;basmati rice/g/75;coriander/g/5/chopped"),
    ("Mushroom Risotto", "Dinner", "Italian", 10, 30, 480,
     "butter/g/15;onion|onions//0.25/finely chopped;chestnut mushrooms/g/100/sliced;arborio rice/g/75;"
     "white wine/ml/30;vegetable stock/ml/250/hot;parmesan/g/20/grated;parsley/g/4/chopped"),
    ("Thai Green Curry", "Dinner", "Thai", 15, 20, 540,
     "vegetable oil/tbsp/0.5;green curry paste/tbsp/0.75;coconut milk/ml/100;"
     "chicken breast/g/125/sliced;green beans/g/50/trimmed;fish sauce/tsp/0.5;lime|limes//0.25/juiced;"
     "jasmine rice/g/75;basil/g/3"),
    ("Beef Chilli", "Dinner", "Mexican", 15, 75, 590,
     "olive oil/tbsp/0.5;onion|onions//0.25/chopped;garlic clove|garlic cloves//0.5/crushed;"
     "beef mince/g/125;chilli powder/tsp/0.5;ground cumin/tsp/0.5;chopped tomatoes/g/100;"
     "kidney beans/g/100/drained;long-grain rice/g/75;soured cream/ml/25"),
    ("Fish Pie", "Dinner", "British", 30, 45, 610,
     "potatoes/g/250/peeled;butter/g/20;milk/ml/125;plain flour/g/10;white fish fillets/g/120;"
     "smoked haddock/g/60;king prawns/g/40;frozen peas/g/30;cheddar/g/20/grated"),
    ("Red Lentil Soup", "Lunch", "British", 10, 30, 290,
     "olive oil/tbsp/0.5;onion|onions//0.25/chopped;carrots/g/80/diced;red lentils/g/50;"
     "ground cumin/tsp/0.25;vegetable stock/ml/300;natural yogurt/g/20"),
    ("Butter Bean Stew", "Dinner", "Spanish", 10, 30, 380,
     "olive oil/tbsp/0.5;red onion|red onions//0.25/sliced;chorizo/g/40/sliced;"
     "smoked paprika/tsp/0.25;chopped tomatoes/g/100;butter beans/g/120/drained;spinach/g/50;"
     "crusty bread/g/50"),
    ("Victoria Sponge", "Baking", "British", 20, 25, 390,
     "butter/g/25/softened;caster sugar/g/25;self-raising flour/g/25;egg|eggs//0.5;milk/ml/5;"
     "strawberry jam/tbsp/0.4;double cream/ml/20/whipped;icing sugar/tsp/0.25"),
    ("Banana Bread", "Baking", "British", 15, 60, 280,
     "butter/g/14/softened;light brown soft sugar/g/18;egg|eggs//0.25;banana|bananas//0.35/mashed;"
     "plain flour/g/28;baking powder/tsp/0.15;walnuts/g/10/chopped"),
    ("Flapjacks", "Baking", "British", 10, 30, 260,
     "butter/g/20;light brown soft sugar/g/15;golden syrup/tbsp/0.3;porridge oats/g/35;sultanas/g/8"),
    ("Fluffy Pancakes", "Breakfast", "American", 10, 15, 320,
     "plain flour/g/50;baking powder/tsp/0.5;caster sugar/g/8;milk/ml/60;egg|eggs//0.5;"
     "butter/g/8/melted;maple syrup/tbsp/1;blueberries/g/30"),
    ("Shakshuka", "Breakfast", "Middle Eastern", 10, 25, 330,
     "olive oil/tbsp/0.5;onion|onions//0.25/sliced;red pepper|red peppers//0.25/sliced;"
     "garlic clove|garlic cloves//0.5/sliced;ground cumin/tsp/0.25;chopped tomatoes/g/100;egg|eggs//2;"
     "feta/g/25/crumbled;coriander/g/3"),
    ("Chickpea Curry", "Dinner", "Indian", 10, 25, 430,
     "vegetable oil/tbsp/0.5;onion|onions//0.25/chopped;garlic clove|garlic cloves//0.5/crushed;"
     "curry powder/tbsp/0.5;chickpeas/g/120/drained;coconut milk/ml/100;spinach/g/50;"
     "basmati rice/g/75"),
    ("Lemon Drizzle Cake", "Baking", "British", 15, 45, 350,
     "butter/g/22/softened;caster sugar/g/22;self-raising flour/g/22;egg|eggs//0.5;"
     "lemon|lemons//0.2/zested;granulated sugar/g/10"),
    ("Greek Salad", "Lunch", "Greek", 15, 0, 270,
     "cucumber/g/80/chopped;tomatoes/g/100/chopped;red onion|red onions//0.15/thinly sliced;"
     "kalamata olives/g/20;feta/g/50;olive oil/tbsp/1;dried oregano/tsp/0.25"),
    ("Pad Thai", "Dinner", "Thai", 15, 15, 510,
     "rice noodles/g/75;vegetable oil/tbsp/0.5;king prawns/g/80;egg|eggs//0.5;beansprouts/g/50;"
     "spring onion|spring onions//1/sliced;fish sauce/tsp/1;tamarind paste/tsp/1;"
     "roasted peanuts/g/15/chopped;lime|limes//0.25"),
    ("Spaghetti Carbonara", "Dinner", "Italian", 10, 15, 620,
     "spaghetti/g/100;pancetta/g/50/diced;egg|eggs//1;parmesan/g/25/grated;black pepper/tsp/0.25;"
     "garlic clove|garlic cloves//0.5/peeled"),
    ("Cottage Pie", "Dinner", "British", 25, 70, 560,
     "olive oil/tbsp/0.5;onion|onions//0.25/chopped;carrots/g/60/diced;beef mince/g/125;"
     "tomato purée/tbsp/0.5;beef stock/ml/100;potatoes/g/250/peeled;butter/g/15;milk/ml/25;"
     "cheddar/g/20/grated"),
    ("Minestrone Soup", "Lunch", "Italian", 15, 35, 310,
     "olive oil/tbsp/0.5;onion|onions//0.25/chopped;carrots/g/50/diced;"
     "celery stick|celery sticks//0.5/chopped;chopped tomatoes/g/80;vegetable stock/ml/250;"
     "cannellini beans/g/60/drained;small pasta shapes/g/30;parmesan/g/10/grated;basil/g/3"),
    ("Scones", "Baking", "British", 15, 12, 240,
     "self-raising flour/g/45;butter/g/10/cubed;caster sugar/g/5;milk/ml/30;strawberry jam/tbsp/0.5;"
     "clotted cream/g/20"),
    ("Chicken Fajitas", "Dinner", "Mexican", 15, 15, 480,
     "chicken breast/g/125/sliced;red pepper|red peppers//0.5/sliced;"
     "red onion|red onions//0.25/sliced;fajita seasoning/tsp/1;olive oil/tbsp/0.5;"
     "flour tortilla|flour tortillas//2;soured cream/ml/25;cheddar/g/20/grated"),
)  # fmt: skip
_DEV_ADJECTIVES = (
    "Easy",
    "Classic",
    "Ultimate",
    "Best-ever",
    "Quick",
    "Healthy",
    "Family",
    "Budget",
    "Lighter",
)
_DEV_SAVOURY = ("One-pot", "Slow-cooker", "Smoky", "Herby", "Freezable")
_DEV_SWEET = ("Mini", "Sticky", "Glazed", "Vegan-friendly")
_DEV_AUTHORS = (
    "Sophie Marlow", "Sophie Marlowe", "Anjali Rao", "Ben Ashdown", "Cassie Brennan", "Oliver Tang",
    "Nia Griffiths", "Freddie Moss", "Rosa Baptiste", "Hamish Reid",
)  # fmt: skip

_TEST_DISHES = (
    ("Chicken Enchiladas", "dinner", "Mexican", 20, 25, 0,
     "shredded chicken/cup/0.5;flour tortilla|flour tortillas//2;enchilada sauce/oz/5;"
     "shredded Monterey Jack/oz/2;sour cream/cup/0.125;black beans/oz/3/drained and rinsed;"
     "green onion|green onions//0.5/sliced"),
    ("Baked Mac and Cheese", "dinner vegetarian", "Southern", 15, 30, 0,
     "elbow macaroni/oz/4;butter/tbsp/1;all-purpose flour/tbsp/0.75;whole milk/cup/0.5;"
     "shredded sharp cheddar/oz/3;shredded Gruyère/oz/1;panko breadcrumbs/cup/0.1;"
     "mustard powder/tsp/0.125"),
    ("Turkey Chili", "dinner", "Tex-Mex", 15, 45, 0,
     "olive oil/tbsp/0.5;ground turkey/lb/0.25;yellow onion|yellow onions//0.25/diced;"
     "garlic/clove/0.5/minced;chili powder/tbsp/0.5;diced tomatoes/oz/7;kidney beans/oz/4/drained;"
     "chicken broth/cup/0.25;shredded sharp cheddar/oz/1"),
    ("Buttermilk Pancakes", "breakfast vegetarian", "Diner", 10, 20, 0,
     "all-purpose flour/cup/0.5;sugar/tbsp/0.5;baking powder/tsp/0.5;buttermilk/cup/0.5;"
     "large egg|large eggs//0.5;unsalted butter/tbsp/0.5/melted;maple syrup/cup/0.125"),
    ("Classic Meatloaf", "dinner", "Midwestern", 20, 60, 0,
     "ground beef/lb/0.33;breadcrumbs/cup/0.15;whole milk/cup/0.08;large egg|large eggs//0.25;"
     "yellow onion|yellow onions//0.15/finely diced;ketchup/cup/0.1;Worcestershire sauce/tsp/0.5;"
     "brown sugar/tbsp/0.4"),
    ("Chocolate Chip Cookies", "dessert vegetarian", "American", 15, 12, 0,
     "unsalted butter/tbsp/0.5/softened;brown sugar/cup/0.04;granulated sugar/cup/0.02;"
     "large egg|large eggs//0.05;vanilla extract/tsp/0.05;all-purpose flour/cup/0.1;"
     "baking soda/tsp/0.03;semisweet chocolate chips/oz/0.5;white chocolate chips/oz/0.25"),
    ("Shrimp Tacos", "dinner", "Mexican", 15, 10, 0,
     "shrimp/oz/4/peeled and deveined;chili powder/tsp/0.5;corn tortilla|corn tortillas//2;"
     "shredded cabbage/cup/0.5;sour cream/cup/0.08;lime|limes//0.25;cotija cheese/oz/0.5/crumbled;"
     "cilantro/cup/0.06"),
    ("Chicken Noodle Soup", "dinner", "Midwestern", 15, 40, 0,
     "olive oil/tbsp/0.5;yellow onion|yellow onions//0.25/diced;carrot|carrots//0.5/sliced;"
     "celery stalk|celery stalks//0.5/sliced;garlic/clove/0.5/minced;chicken broth/cup/1.5;"
     "egg noodles/oz/2;shredded chicken/cup/0.5"),
    ("Baked Ziti", "dinner", "Italian-American", 20, 35, 0,
     "ziti/oz/4;marinara sauce/oz/6;ricotta/oz/3;shredded mozzarella/oz/2;grated Parmesan/oz/0.5;"
     "Italian sausage/oz/3;garlic/clove/0.5/minced"),
    ("Skillet Cornbread", "side vegetarian", "Southern", 10, 25, 0,
     "cornmeal/cup/0.125;all-purpose flour/cup/0.125;sugar/tbsp/0.25;baking powder/tsp/0.25;"
     "buttermilk/cup/0.125;large egg|large eggs//0.25;unsalted butter/tbsp/0.5/melted"),
    ("New York Cheesecake", "dessert vegetarian", "Jewish deli", 30, 70, 0,
     "graham cracker crumbs/cup/0.15;unsalted butter/tbsp/0.5/melted;cream cheese/oz/4/softened;"
     "granulated sugar/cup/0.08;sour cream/cup/0.06;large egg|large eggs//0.33;"
     "vanilla extract/tsp/0.15"),
    ("Clam Chowder", "dinner", "New England", 20, 35, 0,
     "bacon/oz/1/chopped;yellow onion|yellow onions//0.25/diced;"
     "celery stalk|celery stalks//0.25/diced;russet potatoes/lb/0.25/cubed;clam juice/oz/4;"
     "chopped clams/oz/3;heavy cream/cup/0.25;unsalted butter/tbsp/0.5"),
    ("Chicken Jambalaya", "dinner", "Cajun", 20, 40, 0,
     "vegetable oil/tbsp/0.5;andouille sausage/oz/3/sliced;chicken thighs/lb/0.25;"
     "yellow onion|yellow onions//0.25/diced;green bell pepper|green bell peppers//0.25/diced;"
     "garlic/clove/0.5/minced;long-grain rice/cup/0.25;diced tomatoes/oz/4;chicken broth/cup/0.5;"
     "Cajun seasoning/tsp/0.5"),
    ("Pulled Pork Sandwiches", "dinner", "Southern", 15, 480, 0,
     "pork shoulder/lb/0.5;brown sugar/tbsp/0.5;smoked paprika/tsp/0.5;apple cider vinegar/tbsp/0.5;"
     "barbecue sauce/oz/2;brioche bun|brioche buns//1;coleslaw/cup/0.25"),
    ("Chicken Caesar Salad", "lunch", "Californian", 20, 15, 0,
     "chicken breast/oz/4;romaine lettuce/oz/3/chopped;Caesar dressing/tbsp/1.5;"
     "grated Parmesan/oz/0.5;croutons/cup/0.25;lemon|lemons//0.125"),
    ("Black Bean Burgers", "dinner vegetarian", "Californian", 20, 15, 0,
     "black beans/oz/4/drained and rinsed;panko breadcrumbs/cup/0.125;large egg|large eggs//0.25;"
     "ground cumin/tsp/0.25;shredded Monterey Jack/oz/1;brioche bun|brioche buns//1;"
     "avocado|avocados//0.25/sliced"),
    ("Apple Pie", "dessert vegetarian", "American", 45, 55, 0,
     "refrigerated pie crust|refrigerated pie crusts//0.25;"
     "Granny Smith apple|Granny Smith apples//0.75/peeled and sliced;granulated sugar/cup/0.08;"
     "ground cinnamon/tsp/0.15;unsalted butter/tbsp/0.25;lemon|lemons//0.06"),
    ("Weeknight Lasagna", "dinner", "Italian-American", 30, 50, 0,
     "lasagna noodles/oz/2;ground beef/lb/0.2;marinara sauce/oz/5;ricotta/oz/3;"
     "shredded mozzarella/oz/2.5;fresh mozzarella/oz/1/torn;grated Parmesan/oz/0.5;"
     "large egg|large eggs//0.15;fresh basil/cup/0.04"),
    ("Vegetable Fried Rice", "dinner vegetarian", "Asian-American", 10, 15, 0,
     "cooked rice/cup/1;vegetable oil/tbsp/0.5;large egg|large eggs//0.5;frozen peas and carrots/oz/3;"
     "green onion|green onions//0.75/sliced;soy sauce/tbsp/0.75;sesame oil/tsp/0.5;"
     "garlic/clove/0.5/minced"),
    ("Stuffed Bell Peppers", "dinner", "Tex-Mex", 20, 40, 0,
     "bell pepper|bell peppers//1/tops removed;ground beef/lb/0.2;cooked rice/cup/0.25;"
     "diced tomatoes/oz/3;shredded Monterey Jack/oz/1.5;chili powder/tsp/0.25"),
    ("Spinach Artichoke Dip", "appetizer vegetarian", "American", 10, 25, 0,
     "cream cheese/oz/1.5;sour cream/cup/0.06;frozen spinach/oz/1.5/thawed and squeezed;"
     "artichoke hearts/oz/2/chopped;shredded mozzarella/oz/1;fresh mozzarella/oz/0.5;"
     "grated Parmesan/oz/0.5;garlic/clove/0.25/minced"),
)  # fmt: skip
_TEST_ADJECTIVES = (
    "Easy", "Best", "Cheesy", "Spicy", "Grandma's", "Copycat", "Healthier", "Crockpot", "Hearty", "Smoky",
    "Loaded", "Mom's", "Lazy", "Skinny", "Instant Pot", "Big-Batch", "Budget", "Restaurant-Style",
)  # fmt: skip
_TEST_TAGS = ("weeknight", "make-ahead", "kid-friendly", "potluck", "comfort food", "freezer-friendly")
_TEST_SOURCES = (
    "https://www.hearthandskillet.com", "https://www.weeknightpantry.com", "https://cooking.example-times.com",
    "Grandma Jo's recipe card", "Aunt Linda", "church cookbook (2009)",
)  # fmt: skip


@dataclass
class Line:
    name: str
    plural: str
    unit: str  # g, ml, tbsp, tsp, cup, oz, lb, clove, or "" for a count
    amount: float
    note: str


@dataclass
class Recipe:
    title: str
    by: str  # the author (dev) or the source (test)
    category: str  # the category (dev) or "" (test)
    cuisine: str
    servings: int
    prep: int  # minutes
    cook: int
    calories: int
    rating: float  # out of five: one decimal (dev) or whole stars (test)
    votes: int  # how many rated it (dev) or 0 (test)
    tags: list[str]
    lines: list[Line] = field(default_factory=list)
    published: date | None = None
    remark: str = ""

    def amount(self, name: str) -> float:
        return sum(x.amount for x in self.lines if x.name == name)


def _dish_lines(spec: str) -> list[tuple[str, str, str, float, str]]:
    out = []
    for item in spec.split(";"):
        name, unit, amount, *note = item.split("/")
        single, _, plural = name.partition("|")
        out.append((single, plural or single, unit, float(amount), note[0] if note else ""))
    return out


def _scaled(rng: random.Random, unit: str, amount: float) -> float:
    x = amount * rng.uniform(0.85, 1.2)
    if unit in ("g", "ml"):
        step = 1 if x < 20 else 5 if x < 150 else 25
        return max(5, round(x / step) * step)
    if unit in ("oz", "clove", ""):
        return max(1, round(x))
    step = 1 if x > 4 else 0.5 if x > 1.5 else 0.25  # spoons, cups and pounds
    return max(0.25, round(x / step) * step)


def _recipes(split: str, seed: str, n: int) -> list[Recipe]:
    rng = random.Random(f"{seed}/{n}")
    dev = split == "dev"
    dishes = _DEV_DISHES if dev else _TEST_DISHES
    titles: list[tuple[str, int]] = []
    for i, (dish, category, *_rest) in enumerate(dishes):
        sweet = category in ("Baking", "Breakfast") or "dessert" in category
        extra = (_DEV_SWEET if sweet else _DEV_SAVOURY) if dev else ()
        titles += [(dish, i)] + [
            (f"{adj} {dish}", i) for adj in (*(_DEV_ADJECTIVES if dev else _TEST_ADJECTIVES), *extra)
        ]
    plain = [t for t in titles if t[0] == dishes[t[1]][0]]
    rng.shuffle(plain)
    rest = [t for t in titles if t not in plain]
    rng.shuffle(rest)
    chosen = (plain[: max(2, n // 3)] + rest)[:n]
    if not dev:  # the first note has ounces to ask about
        chosen.sort(key=lambda t: "/oz/" not in dishes[t[1]][6])
    return [_recipe(rng, dev, title, dishes[i]) for title, i in chosen]


def _recipe(rng: random.Random, dev: bool, title: str, dish: tuple) -> Recipe:
    _, category, cuisine, prep, cook, calories, spec = dish
    sweet = category in ("Baking",) or "dessert" in category
    servings = rng.choice(
        (8, 10, 12, 16) if sweet and dev else (24, 30, 36) if "Cookies" in title else (2, 4, 4, 6, 8)
    )
    cook = rng.randint(240, 480) if "low-cooker" in title or "Crockpot" in title else cook
    lines = [
        Line(name, plural, unit, _scaled(rng, unit, a * servings), note)
        for name, plural, unit, a, note in _dish_lines(spec)
    ]
    tags = category.split() if not dev else []
    if not dev:
        tags += rng.sample(_TEST_TAGS, rng.randint(1, 2))
    return Recipe(
        title=title,
        by=rng.choice(_DEV_AUTHORS if dev else _TEST_SOURCES),
        category=category if dev else "",
        cuisine=cuisine,
        servings=servings,
        prep=max(5, prep + rng.choice((-5, 0, 0, 5, 10))),
        cook=cook and max(5, round(cook * rng.uniform(0.8, 1.25) / 5) * 5),
        calories=round(calories * rng.uniform(0.85, 1.15)),
        rating=round(rng.uniform(3.2, 5.0), 1) if dev else rng.choice((3, 4, 4, 5, 5)),
        votes=round(rng.paretovariate(1.2) * 8) if dev else 0,
        tags=tags,
        lines=lines,
        published=date(2015, 1, 1) + timedelta(days=rng.randrange(3600)),
        remark=_remark(rng, lines, "dessert" in tags) if not dev else "",
    )


def _remark(rng: random.Random, lines: list[Line], sweet: bool) -> str:
    mine = [x.name for x in lines]
    other = rng.choice([x for x in _OUNCES if (x in _SWEET_OUNCES) == sweet])
    return rng.choice(
        (
            "",
            "",
            f"Next time try adding some {other}.",
            f"Ran out of {rng.choice(mine)} once and used {other} instead; still good.",
            "Doubles well for a crowd.",
            "Kids loved it.",
        )
    )


_OUNCES = sorted(
    {name for *_, spec in _TEST_DISHES for name, _, unit, _, _ in _dish_lines(spec) if unit == "oz"}
)
_SWEET_OUNCES = ("semisweet chocolate chips", "white chocolate chips", "cream cheese")

# -- the files ----------------------------------------------------------------------------------

_FRACTIONS = {0.25: "¼", 0.5: "½", 0.75: "¾"}
_US_FRACTIONS = {0.25: "1/4", 0.5: "1/2", 0.75: "3/4"}


def _quantity(amount: float, fractions: dict[float, str], sep: str) -> str:
    whole, part = int(amount), round(amount - int(amount), 2)
    if not part:
        return str(whole)
    return fractions[part] if not whole else f"{whole}{sep}{fractions[part]}"


def _dev_line(x: Line) -> str:
    if x.unit in ("g", "ml"):
        text = f"{int(x.amount)}{x.unit} {x.name}"
    elif x.unit:
        text = f"{_quantity(x.amount, _FRACTIONS, '')} {x.unit} {x.name}"
    else:
        text = f"{int(x.amount)} {x.name if x.amount == 1 else x.plural}"
    return f"{text}, {x.note}" if x.note else text


def _test_line(x: Line) -> str:
    if not x.unit:
        text = f"{int(x.amount)} {x.name if x.amount == 1 else x.plural}"
    else:
        unit = x.unit + ("s" if x.amount > 1 and x.unit in ("cup", "clove") else "")
        text = f"{_quantity(x.amount, _US_FRACTIONS, ' ')} {unit} {x.name}"
    return f"{text}, {x.note}" if x.note else text


def _iso(minutes: int) -> str:
    h, m = divmod(minutes, 60)
    return "PT" + (f"{h}H" if h else "") + (f"{m}M" if m or not h else "")


def _steps(r: Recipe, us: bool) -> list[str]:
    """Method steps that follow the recipe's ingredients (US wording in ``test``)."""
    prepped = [x.name for x in r.lines if x.note][:2] or [r.lines[0].name]
    fat = next((x.name for x in r.lines if x.name.endswith(("oil", "butter"))), None)
    main = next(x.name for x in r.lines if x.name != fat)
    first = f"Prep the {' and the '.join(prepped)}."
    if not r.cook:
        return [first, "Toss everything together in a large bowl and serve."]
    if r.category == "Baking" or "dessert" in r.tags:
        oven = "Preheat the oven to 350°F" if us else "Heat the oven to 180C/160C fan/gas 4"
        return [
            f"{oven} and line a tin with baking parchment.",
            f"Beat the {fat or main} with the sugar until pale, then mix in the rest of the ingredients.",
            f"Spoon into the tin and bake for {r.cook} {'minutes' if us else 'mins'} until golden.",
            "Leave to cool before slicing.",
        ]
    pan = "a large skillet over medium-high heat" if us else "a large pan over a medium heat"
    heat = f"Heat the {fat} in {pan}" if fat else f"Heat {pan}"
    unit = "minutes" if us else "mins"
    return [
        first,
        f"{heat}, add the {main} and cook for 5 {unit}, stirring often.",
        f"Add everything else and cook for {max(r.cook - 5, 5)} {unit} more, until done.",
        "Season to taste and serve." if not us else "Taste, adjust the seasoning and serve.",
    ]


def _json_ld(recipes: list[Recipe]) -> list[dict]:
    return [
        {
            "@context": "https://schema.org",
            "@type": "Recipe",
            "name": r.title,
            "author": {"@type": "Person", "name": r.by},
            "datePublished": f"{r.published}",
            "url": "https://www.goodplates.co.uk/recipes/" + re.sub(r"[^a-z0-9]+", "-", r.title.lower()),
            "recipeYield": f"Makes {r.servings} slices" if r.category == "Baking" else f"Serves {r.servings}",
            "prepTime": _iso(r.prep),
            "cookTime": _iso(r.cook),
            "totalTime": _iso(r.prep + r.cook),
            "recipeCategory": r.category,
            "recipeCuisine": r.cuisine,
            "recipeIngredient": [_dev_line(x) for x in r.lines],
            "recipeInstructions": [{"@type": "HowToStep", "text": s} for s in _steps(r, us=False)],
            "nutrition": {"@type": "NutritionInformation", "calories": f"{r.calories} calories"},
            "aggregateRating": {"@type": "AggregateRating", "ratingValue": r.rating, "ratingCount": r.votes},
        }
        for r in recipes
    ]


def _note(r: Recipe) -> str:
    head = [
        "---",
        f"title: {r.title}",
        f"servings: {r.servings}",
        f"prep: {r.prep} min",
        f"cook: {r.cook} min",
        f"cuisine: {r.cuisine}",
        f"tags: [{', '.join(r.tags)}]",
        f"rating: {int(r.rating)}",
        f"source: {r.by}",
        "---",
        f"# {r.title}",
        "",
        "## Ingredients",
        *[f"- {_test_line(x)}" for x in r.lines],
        "",
        "## Directions",
        *[f"{i}. {step}" for i, step in enumerate(_steps(r, us=True), 1)],
    ]
    if r.remark:
        head += ["", "## Notes", r.remark]
    return "\n".join(head) + "\n"


def _folder(recipes: list[Recipe]) -> dict[str, str]:
    return {
        f"Recipes/{re.sub(r'[^a-z0-9]+', '-', r.title.lower()).strip('-')}.md": _note(r)
        for r in sorted(recipes, key=lambda r: r.title)
    }


def _fit(split: str, seed: str, chars: int) -> tuple[list[Recipe], object]:
    per = 1750 if split == "dev" else 900
    n = max(4, chars // per)
    for _ in range(6):
        recipes = _recipes(split, seed, n)
        context = _json_ld(recipes) if split == "dev" else _folder(recipes)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(4, round(n * chars / size))
    return recipes, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: Counter) -> object:
    ranked = counts.most_common(2)
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _ask_count(split: str, rng: random.Random, recipes: list[Recipe]) -> _Asked:
    r = rng.choice(recipes)
    if split == "dev":
        name = rng.choice([x.name for x in r.lines if x.unit])
        n = sum(any(x.name == name for x in y.lines) for y in recipes)
        return (
            f"How many of the recipes list '{name}' as an ingredient (that exact ingredient)?",
            n,
            {"ingredient": name},
        )
    tag = rng.choice(r.tags)
    limit = r.prep + r.cook + rng.randint(1, 20)
    n = sum(tag in y.tags and y.prep + y.cook < limit for y in recipes)
    q = f"Count the recipes tagged '{tag}' whose prep and cook times add up to less than {limit} minutes."
    return q, n, {"tag": tag, "limit": limit}


def _ask_total(split: str, rng: random.Random, recipes: list[Recipe]) -> _Asked:
    r = rng.choice(recipes)
    unit = "g" if split == "dev" else "oz"
    names = [x.name for x in r.lines if x.unit == unit]
    if not names:
        return None
    name = rng.choice(names)
    if split == "dev":
        n = sum(y.amount(name) for y in recipes if y.category == r.category)
        q = f"How many grams of {name} do the {r.category} recipes call for altogether?"
        return q, int(n), {"ingredient": name, "category": r.category}
    n = sum(y.amount(name) for y in recipes if y.cuisine == r.cuisine)
    q = f"Add up the ounces of {name} used across all the {r.cuisine} recipes."
    return q, int(n), {"ingredient": name, "cuisine": r.cuisine}


def _ask_top(split: str, rng: random.Random, recipes: list[Recipe]) -> _Asked:
    r = rng.choice(recipes)
    if split == "dev":
        best = _leader(Counter({y.title: y.votes for y in recipes if y.cuisine == r.cuisine}))
        q = f"Which {r.cuisine} recipe was rated by the most people?"
        return None if best is None else (q, best, {"cuisine": r.cuisine})
    tag = rng.choice(r.tags)
    best = _leader(Counter({y.title: len(y.lines) for y in recipes if tag in y.tags}))
    q = f"Which recipe tagged '{tag}' has the longest ingredient list? Give its title."
    return None if best is None else (q, best, {"tag": tag})


def _ask_lookup(split: str, rng: random.Random, recipes: list[Recipe]) -> _Asked:
    if split == "dev":
        r = rng.choice(recipes)
        return f"How long does '{r.title}' take in total, in minutes?", r.prep + r.cook, {"title": r.title}
    r = rng.choice([y for y in recipes if any(x.unit == "oz" for x in y.lines)])
    name = rng.choice([x.name for x in r.lines if x.unit == "oz"])
    q = f"Per its note, how many ounces of {name} go into {r.title}?"
    return q, int(r.amount(name)), {"title": r.title, "ingredient": name}


def _ask_hop(split: str, rng: random.Random, recipes: list[Recipe]) -> _Asked:
    r = rng.choice(recipes)
    if split == "dev":
        best = _leader(Counter({y.title: y.calories for y in recipes if y.category == r.category}))
        if best is None:
            return None
        (author,) = [y.by for y in recipes if y.title == best]
        q = f"Who wrote the {r.category} recipe with the most calories per serving?"
        return q, author, {"category": r.category}
    names = [x.name for x in r.lines if x.unit == "oz"]  # used in more than one cuisine
    names = [x for x in names if len({y.cuisine for y in recipes if y.amount(x)}) > 1]
    if not names:
        return None
    name = rng.choice(names)
    best = _leader(Counter({y.title: y.amount(name) for y in recipes if y.amount(name)}))
    if best is None:
        return None
    (cuisine,) = [y.cuisine for y in recipes if y.title == best]
    return f"What cuisine is the recipe that uses the most ounces of {name}?", cuisine, {"ingredient": name}


_ASK = {"count": _ask_count, "total": _ask_total, "top": _ask_top, "lookup": _ask_lookup, "hop": _ask_hop}


@family(
    "recipes",
    "recipes: a site's schema.org recipes as a list of dicts (dev) or Markdown recipe notes as a dict "
    "of file name to text (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    recipes, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    # other ingredients, categories, cuisines, tags and recipes, then one recipe's lookup
    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, recipes), kind, "lookup", nonzero=True, hidden=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="list of dicts" if ref.split == "dev" else "dict of strings (file name -> Markdown note)",
        recipes=len(recipes),
    )
