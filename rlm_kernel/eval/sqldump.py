"""Questions about a database dump: a MySQL dump as one string (``dev``) or a PostgreSQL dump split
into one file per table, as a dict of file name to SQL text (``test``).

What a notebook holds after a colleague sends "the data" as SQL rather than CSV: ``CREATE TABLE``
statements and the rows as ``INSERT`` statements, for a few tables that refer to each other by
id. Names with quotes in them are escaped the dump's way; names that extend another's stand beside
each other. Rows are added until the text is about the length asked for. Kinds of question:

- ``count``: how many rows of the main table meet two conditions (one of them a join to another
  table: ``dev``, or a threshold: ``test``);
- ``lookup``: one attribute of the person behind one row of the main table (a join across two
  tables);
- ``total``: a sum over one group, joined across two tables;
- ``top``: which person (``dev``) or course (``test``) has the most rows of the main table in one
  period (a clear leader).

Every answer is computed from the rows the generator wrote. Score: ``exact`` (numbers as numbers,
names without case).

Splits: ``dev`` is a ``mysqldump`` of an online shop (``customers``, ``products``, ``orders`` with
backquoted names, ``LOCK TABLES`` and multi-row ``INSERT ... VALUES (...),(...);`` statements,
quotes escaped with a backslash); ``test`` is a ``pg_dump --inserts`` of a university's records
split into ``schema.sql`` and one ``<table>.sql`` per table (``public.students``,
``public.courses``, ``public.enrollments``, one ``INSERT`` with a column list per row, quotes
doubled): other containers, tables, columns and wording.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "lookup", "total", "top")

_FIRST = (
    "Aoife", "Liam", "Sofia", "Mateo", "Amara", "Noah", "Yara", "Elias", "Mia", "Omar", "Hana", "Lucas",
    "Zoe", "Ivan", "Leila", "Felix", "Nora", "Tariq", "Ella", "Ken", "Ana", "Conor", "Ines", "Kofi", "Maeve",
    "Rui", "Saoirse", "Dara", "Emil", "Farah",
)  # fmt: skip
_LAST = (
    "O'Neill",
    "Murphy",
    "Silva",
    "Santos",
    "Okoye",
    "Becker",
    "Haddad",
    "Novak",
    "Rossi",
    "Kowalski",
    "Dubois",
    "Larsen",
    "D'Angelo",
    "Tanaka",
    "Ahmed",
    "Jensen",
    "Moreau",
    "Costa",
    "Brennan",
    "Fischer",
    "Walsh",
    "Byrne",
    "Nowak",
    "Mensah",
    "Ferreira",
    "Lindgren",
    "O'Connor",
    "Kaur",
    "Petrov",
    "Quinn",
)
_CITIES = ("Dublin", "Cork", "Galway", "Limerick", "Waterford", "Kilkenny", "Sligo", "Athlone")
_PRODUCTS = (
    ("Trail Running Shoe", "footwear", 89.0), ("Trail Running Shoe GTX", "footwear", 119.0),
    ("Hiking Boot", "footwear", 149.0), ("Merino T-Shirt", "apparel", 45.0),
    ("Merino T-Shirt Long Sleeve", "apparel", 55.0), ("Rain Jacket", "apparel", 129.0),
    ("Fleece Mid-Layer", "apparel", 69.0), ("Headlamp 400", "gear", 39.5), ("Headlamp 400 Pro", "gear", 59.5),
    ("Trekking Poles", "gear", 74.0), ("Water Filter", "gear", 34.99), ("Daypack 22L", "bags", 79.0),
    ("Daypack 22L Kids", "bags", 49.0), ("Duffel 60L", "bags", 99.0),
    ("Energy Gel 12-pack", "nutrition", 18.0), ("Electrolyte Tabs", "nutrition", 7.5),
)  # fmt: skip
_STATUSES = ("shipped", "shipped", "shipped", "delivered", "delivered", "cancelled", "returned", "pending")

_COURSES = (
    ("CS101", "Introduction to Programming", 6, "Computer Science"),
    ("CS101L", "Introduction to Programming Lab", 2, "Computer Science"),
    ("CS210", "Data Structures", 6, "Computer Science"), ("CS315", "Databases", 5, "Computer Science"),
    ("MA110", "Calculus I", 6, "Mathematics"), ("MA111", "Calculus II", 6, "Mathematics"),
    ("MA205", "Linear Algebra", 5, "Mathematics"), ("ST200", "Statistics", 5, "Mathematics"),
    ("PH101", "Mechanics", 6, "Physics"), ("PH101L", "Mechanics Lab", 2, "Physics"),
    ("EC120", "Microeconomics", 5, "Economics"), ("EC121", "Macroeconomics", 5, "Economics"),
    ("HI150", "Modern European History", 4, "History"),
    ("PL100", "Introduction to Philosophy", 4, "Philosophy"),
)  # fmt: skip
_TERMS = ("2023-autumn", "2024-spring", "2024-autumn", "2025-spring")
_PROGRAMMES = ("BSc Computer Science", "BSc Mathematics", "BSc Physics", "BA Economics", "BA History")


@dataclass
class Db:
    people: list[dict]  # customers (dev) or students (test)
    items: list[dict]  # products (dev) or courses (test)
    rows: list[dict]  # orders (dev) or enrollments (test)


def _people(split: str, rng: random.Random, n: int) -> list[dict]:
    people = []
    names: set[str] = set()
    for i in range(max(6, min(n // 6, 360))):  # at most 360 people, of 900 names
        while True:
            first, last = rng.choice(_FIRST), rng.choice(_LAST)
            if (first, last) not in names:
                break
        names.add((first, last))
        local = f"{first}.{last}".lower().replace("'", "")
        if split == "dev":
            people.append(
                {
                    "id": 1001 + i,
                    "first": first,
                    "last": last,
                    "email": f"{local}{rng.randint(1, 99)}@example.ie",
                    "city": rng.choice(_CITIES),
                    "since": date(2019, 1, 1) + timedelta(days=rng.randint(0, 1800)),
                }
            )
        else:
            people.append(
                {
                    "id": 230000 + rng.randint(0, 9999) * 10 + i % 10,
                    "first": first,
                    "last": last,
                    "email": f"{local}@student.northfield.edu",
                    "programme": rng.choice(_PROGRAMMES),
                    "year": rng.randint(2020, 2024),
                }
            )
    if split == "test":
        seen: set[int] = set()
        for p in people:  # ids unique
            while p["id"] in seen:
                p["id"] += 10
            seen.add(p["id"])
    return people


def _db(split: str, seed: str, n: int) -> Db:
    rng = random.Random(f"{seed}/{n}")
    people = _people(split, rng, n)
    weights = [rng.choice((1, 1, 2, 4, 8)) for _ in people]
    if split == "dev":
        items = [
            {
                "id": 10 + i,
                "sku": f"SKU-{rng.randint(10000, 99999)}",
                "name": name,
                "category": cat,
                "price": price,
            }
            for i, (name, cat, price) in enumerate(_PRODUCTS)
        ]
    else:
        items = [
            {"id": i + 1, "code": code, "title": title, "credits": credits, "department": dept}
            for i, (code, title, credits, dept) in enumerate(_COURSES)
        ]
    rows = []
    for i in range(n):
        person = rng.choices(people, weights)[0]
        item = rng.choice(items)
        if split == "dev":
            rows.append(
                {
                    "id": 50001 + i,
                    "customer": person["id"],
                    "product": item["id"],
                    "qty": rng.choice((1, 1, 1, 2, 3)),
                    "status": rng.choice(_STATUSES),
                    "placed": date(2024, 1, 2) + timedelta(days=i * 300 // n + rng.randint(0, 2)),
                }
            )
        else:
            rows.append(
                {
                    "id": 70001 + i,
                    "student": person["id"],
                    "course": item["id"],
                    "term": rng.choice(_TERMS),
                    "grade": rng.choice((None, *range(35, 100))),
                }
            )
    return Db(people, items, rows)


# -- the files ----------------------------------------------------------------------------------


def _my(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (int, float)):
        return f"{value:.2f}" if isinstance(value, float) else str(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _pg(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def _mysqldump(db: Db) -> str:
    out = [
        "-- MySQL dump 10.13  Distrib 8.0.36, for Linux (x86_64)",
        "--",
        "-- Host: db.internal    Database: trailshop",
        "-- ------------------------------------------------------",
        "-- Server version\t8.0.36",
        "",
        "/*!40101 SET NAMES utf8mb4 */;",
        "/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0 */;",
    ]
    tables = (
        (
            "customers",
            (
                ("customer_id", "int NOT NULL AUTO_INCREMENT"),
                ("first_name", "varchar(60) NOT NULL"),
                ("last_name", "varchar(60) NOT NULL"),
                ("email", "varchar(120) NOT NULL"),
                ("city", "varchar(60) DEFAULT NULL"),
                ("created_at", "date NOT NULL"),
            ),
            [(p["id"], p["first"], p["last"], p["email"], p["city"], f"{p['since']}") for p in db.people],
        ),
        (
            "products",
            (
                ("product_id", "int NOT NULL AUTO_INCREMENT"),
                ("sku", "varchar(20) NOT NULL"),
                ("name", "varchar(120) NOT NULL"),
                ("category", "varchar(40) NOT NULL"),
                ("unit_price", "decimal(8,2) NOT NULL"),
            ),
            [(p["id"], p["sku"], p["name"], p["category"], p["price"]) for p in db.items],
        ),
        (
            "orders",
            (
                ("order_id", "int NOT NULL AUTO_INCREMENT"),
                ("customer_id", "int NOT NULL"),
                ("product_id", "int NOT NULL"),
                ("quantity", "smallint NOT NULL DEFAULT '1'"),
                ("status", "enum('pending','shipped','delivered','cancelled','returned') NOT NULL"),
                ("order_date", "date NOT NULL"),
            ),
            [
                (r["id"], r["customer"], r["product"], r["qty"], r["status"], f"{r['placed']}")
                for r in db.rows
            ],
        ),
    )
    for name, columns, values in tables:
        out += [
            "",
            "--",
            f"-- Table structure for table `{name}`",
            "--",
            "",
            f"DROP TABLE IF EXISTS `{name}`;",
        ]
        out.append(f"CREATE TABLE `{name}` (")
        out += [f"  `{c}` {t}," for c, t in columns]
        key = f"  PRIMARY KEY (`{columns[0][0]}`)"
        if name == "orders":
            key += ",\n  KEY `fk_orders_customer` (`customer_id`),\n  KEY `fk_orders_product` (`product_id`)"
        out += [key, ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci;", ""]
        out += ["--", f"-- Dumping data for table `{name}`", "--", "", f"LOCK TABLES `{name}` WRITE;"]
        for start in range(0, len(values), 40):  # long multi-row statements, as mysqldump writes them
            chunk = values[start : start + 40]
            rows = ",".join("(" + ",".join(map(_my, v)) + ")" for v in chunk)
            out.append(f"INSERT INTO `{name}` VALUES {rows};")  # noqa: S608 (the dump's text)
        out += ["UNLOCK TABLES;"]
    out += [
        "",
        "/*!40014 SET FOREIGN_KEY_CHECKS=@OLD_FOREIGN_KEY_CHECKS */;",
        "",
        "-- Dump completed on 2024-11-04 03:00:12",
    ]
    return "\n".join(out) + "\n"


def _pgdump(db: Db) -> dict[str, str]:
    head = ["--", "-- PostgreSQL database dump", "--", "", "SET client_encoding = 'UTF8';", ""]
    schema = [
        *head,
        "CREATE TABLE public.students (",
        "    student_id integer NOT NULL,",
        "    given_name text NOT NULL,",
        "    family_name text NOT NULL,",
        "    email text NOT NULL,",
        "    programme text,",
        "    entry_year smallint",
        ");",
        "",
        "CREATE TABLE public.courses (",
        "    course_id integer NOT NULL,",
        "    code character varying(8) NOT NULL,",
        "    title text NOT NULL,",
        "    ects smallint NOT NULL,",
        "    department text",
        ");",
        "",
        "CREATE TABLE public.enrollments (",
        "    enrollment_id integer NOT NULL,",
        "    student_id integer NOT NULL REFERENCES public.students(student_id),",
        "    course_id integer NOT NULL REFERENCES public.courses(course_id),",
        "    term text NOT NULL,",
        "    final_mark smallint  -- NULL while the course is not yet marked",
        ");",
        "",
        "ALTER TABLE ONLY public.students ADD CONSTRAINT students_pkey PRIMARY KEY (student_id);",
        "ALTER TABLE ONLY public.courses ADD CONSTRAINT courses_pkey PRIMARY KEY (course_id);",
        "ALTER TABLE ONLY public.enrollments ADD CONSTRAINT enrollments_pkey PRIMARY KEY (enrollment_id);",
    ]

    def inserts(table: str, columns: str, values: list[tuple]) -> str:
        lines = [*head, f"-- Data for Name: {table}; Type: TABLE DATA; Schema: public; Owner: registry", ""]
        for v in values:  # the dump's text, not a query run anywhere
            lines.append(f"INSERT INTO public.{table} ({columns}) VALUES ({', '.join(map(_pg, v))});")  # noqa: S608
        return "\n".join(lines) + "\n"

    return {
        "schema.sql": "\n".join(schema) + "\n",
        "students.sql": inserts(
            "students",
            "student_id, given_name, family_name, email, programme, entry_year",
            [(p["id"], p["first"], p["last"], p["email"], p["programme"], p["year"]) for p in db.people],
        ),
        "courses.sql": inserts(
            "courses",
            "course_id, code, title, ects, department",
            [(c["id"], c["code"], c["title"], c["credits"], c["department"]) for c in db.items],
        ),
        "enrollments.sql": inserts(
            "enrollments",
            "enrollment_id, student_id, course_id, term, final_mark",
            [(r["id"], r["student"], r["course"], r["term"], r["grade"]) for r in db.rows],
        ),
    }


def _fit(split: str, seed: str, chars: int) -> tuple[Db, object]:
    per = 60 if split == "dev" else 150
    n = max(12, chars // per)
    for _ in range(6):
        db = _db(split, seed, n)
        context = _mysqldump(db) if split == "dev" else _pgdump(db)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(12, round(n * chars / size))
    return db, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _by_id(rows: list[dict]) -> dict[int, dict]:
    return {r["id"]: r for r in rows}


def _ask_count(split: str, rng: random.Random, db: Db) -> _Asked:
    if split == "dev":
        city, status = rng.choice(_CITIES), rng.choice(("shipped", "delivered", "cancelled", "returned"))
        people = _by_id(db.people)
        n = sum(people[r["customer"]]["city"] == city and r["status"] == status for r in db.rows)
        q = f"How many orders with status '{status}' were placed by customers from {city}?"
        return q, n, {"city": city, "status": status}
    course = rng.choice(db.items)
    mark = rng.choice((50, 60, 70, 80))
    n = sum(r["course"] == course["id"] and r["grade"] is not None and r["grade"] >= mark for r in db.rows)
    q = f"Across all terms, in how many enrollments in {course['code']} was the final mark {mark} or above?"
    return q, n, {"code": course["code"], "mark": mark}


def _ask_lookup(split: str, rng: random.Random, db: Db) -> _Asked:
    row = rng.choice(db.rows)
    if split == "dev":
        person = _by_id(db.people)[row["customer"]]
        q = f"Which city does the customer who placed order {row['id']} live in?"
        return q, person["city"], {"order_id": row["id"]}
    person = _by_id(db.people)[row["student"]]
    q = f"Enrollment {row['id']}: what is the email address of the student it belongs to?"
    return q, person["email"], {"enrollment_id": row["id"]}


def _ask_total(split: str, rng: random.Random, db: Db) -> _Asked:
    if split == "dev":
        items = _by_id(db.items)
        category = rng.choice(db.items)["category"]
        month = rng.randint(1, 10)
        total = sum(
            r["qty"] * items[r["product"]]["price"]
            for r in db.rows
            if items[r["product"]]["category"] == category
            and r["placed"].month == month
            and r["placed"].year == 2024
            and r["status"] != "cancelled"
        )
        name = date(2024, month, 1).strftime("%B")
        q = (
            f"What was the total value (quantity times unit price) of the {category} orders placed in "
            f"{name} 2024, cancelled orders left out?"
        )
        return q, round(total, 2), {"category": category, "month": f"2024-{month:02d}"}
    items = _by_id(db.items)
    person = rng.choice(db.rows)["student"]
    total = sum(
        items[r["course"]]["credits"]
        for r in db.rows
        if r["student"] == person and r["grade"] is not None and r["grade"] >= 40
    )
    q = f"How many ECTS credits has student {person} earned from courses with a final mark of 40 or above?"
    return q, total, {"student_id": person}


def _ask_top(split: str, rng: random.Random, db: Db) -> _Asked:
    counts: dict[object, int] = {}
    if split == "dev":
        month = rng.randint(1, 10)
        for r in db.rows:
            if r["placed"].month == month:
                counts[r["customer"]] = counts.get(r["customer"], 0) + 1
        params: dict = {"month": f"2024-{month:02d}"}
    else:
        term = rng.choice(_TERMS)
        for r in db.rows:
            if r["term"] == term:
                counts[r["course"]] = counts.get(r["course"], 0) + 1
        params = {"term": term}
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    if split == "dev":
        p = _by_id(db.people)[ranked[0][0]]
        name = date(2024, month, 1).strftime("%B")
        q = f"Which customer placed the most orders in {name} 2024? Give their first and last name."
        return q, f"{p['first']} {p['last']}", params
    code = _by_id(db.items)[ranked[0][0]]["code"]
    q = f"For the term {term}, which course code has the largest number of enrollments?"
    return q, code, params


_ASK = {"count": _ask_count, "lookup": _ask_lookup, "total": _ask_total, "top": _ask_top}


@family(
    "sqldump",
    "a database dump: a MySQL dump as a string (dev) or a PostgreSQL dump as a dict of file texts (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    db, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]
    # other conditions, rows and groups, then one row's person, which is always there
    kind, asked = draw_question(lambda kind_: _ASK[kind_](ref.split, rng, db), kind, "lookup", nonzero=True)
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string (SQL)" if ref.split == "dev" else "dict of strings (SQL files)",
        rows=len(db.rows),
    )
