"""Questions about investment accounts' trades: a US investor's brokerage and retirement accounts'
investment transactions as an account aggregation API returns them, with the accounts and
securities they refer to, as a nested dict (``dev``), or a European investor's broker activity
statement for a half year, the multi-section CSV as one string (``test``).

What a notebook holds when someone works out what their investments did: each buy and sell with
its quantity, price and fees, the dividends paid and reinvested, account fees, deposits and
contributions; or the statement's trades with their proceeds, commissions, cost basis and
realized profit or loss, the dividends and the tax withheld from them, and the instruments. The
API names each transaction's account and security only by id (the accounts and securities are
listed beside), signs amounts as cash leaving the account (sales, dividends and deposits are
negative), gives sells a negative quantity, lists the newest first, reinvests dividends in
fractional shares in the tax-advantaged accounts, and holds tickers and account names that extend
another's (``VT`` and ``VTI``, ``IRA`` and ``ROTH IRA``). The statement mixes sections of different
columns in one file, follows each symbol's trades with a subtotal and each closing trade with the
lots it closed, trades in dollars and euros with totals for each and in the base currency, and
writes dates and times with a comma inside quotes. Transactions (or trades) are added until the
indented JSON (or the text) is about the length asked for. Kinds of question:

- ``count``: one security's purchases (not reinvestments) in one account, or the dividends paid
  into one account in one month (``dev``); one symbol's trades, or the closing trades of one
  month that realized a loss (``test``);
- ``total``: one security's dividends over all accounts, or the shares of one security one account
  added, net of sales (``dev``); the commissions on one symbol's trades, or one symbol's dividends
  net of the tax withheld (``test``);
- ``top``: the security one account spent most buying, or the security that paid the most
  dividends (``dev``); the dollar symbol with the largest realized profit, or the symbol that paid
  the most dividends in one currency (``test``) (a clear leader);
- ``lookup``: the price of one trade on one day, or the security one account sold on one day
  (``dev``); one trade's price, or one symbol's contract id (``test``).

Every answer is computed from the trades the generator wrote. Score: ``exact``.

Splits: ``dev`` is the response (``accounts`` each with ``account_id``, ``balances``, ``mask``,
``name``, ``official_name``, ``subtype`` and ``type``; ``investment_transactions`` each with
``account_id``, ``amount``, ``date``, ``fees``, ``investment_transaction_id``, ``name``, ``price``,
``quantity``, ``security_id``, ``type`` and ``subtype``; ``securities`` each with
``security_id``, ``ticker_symbol``, ``name``, ``type``, ``close_price`` and more; ``item``,
``request_id``, ``total_investment_transactions``); ``test`` is the statement (``Statement``,
``Account Information``, ``Trades`` with ``DataDiscriminator``, ``Asset Category``, ``Currency``,
``Symbol``, ``Date/Time``, ``Quantity``, ``T. Price``, ``C. Price``, ``Proceeds``, ``Comm/Fee``,
``Basis``, ``Realized P/L``, ``MTM P/L`` and ``Code``, ``Dividends``, ``Withholding Tax``,
``Deposits & Withdrawals``, ``Fees``, ``Financial Instrument Information``): other containers,
fields, brokers and wording.
"""

from __future__ import annotations

import csv
import io
import random
import string
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup")

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


# -- the dev API response -----------------------------------------------------------------------

_SECURITIES = (  # ticker, name, type, price in cents, dividend a share in cents (a quarter), weight
    ("AAPL", "Apple Inc.", "equity", 18200, 24, 1.2, "XNAS"),
    ("MSFT", "Microsoft Corporation", "equity", 41500, 75, 1.0, "XNAS"),
    ("NVDA", "NVIDIA Corporation", "equity", 88000, 4, 0.8, "XNAS"),
    ("KO", "The Coca-Cola Company", "equity", 6000, 48, 0.6, "XNYS"),
    ("VTI", "Vanguard Total Stock Market ETF", "etf", 25600, 91, 1.6, "ARCX"),
    ("VT", "Vanguard Total World Stock ETF", "etf", 11000, 62, 1.1, "ARCX"),
    ("VXUS", "Vanguard Total International Stock ETF", "etf", 6000, 44, 0.9, "XNAS"),
    ("BND", "Vanguard Total Bond Market ETF", "etf", 7200, 22, 0.8, "XNAS"),
    ("BNDX", "Vanguard Total International Bond ETF", "etf", 4900, 15, 0.5, "XNAS"),
    ("SCHD", "Schwab U.S. Dividend Equity ETF", "etf", 7900, 61, 0.9, "ARCX"),
    ("FXAIX", "Fidelity 500 Index Fund", "mutual fund", 18500, 61, 0.9, None),
)
_PLAID_ACCOUNTS = (  # name, official name, subtype, reinvests dividends
    ("Individual - TOD", "Individual - TOD", "brokerage", False),
    ("ROTH IRA", "ROTH IRA", "roth", True),
    ("IRA", "Traditional IRA", "ira", True),
    ("Health Savings Account", "Health Savings Account", "hsa", True),
)


def _plaid_id(rng: random.Random, n: int = 37) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


@dataclass
class Move:
    day: date
    account: int
    security: int | None
    type: str  # buy, sell, cash, fee
    subtype: str  # buy, sell, dividend reinvestment, dividend, deposit, contribution, account fee
    quantity: int  # thousandths of a share; negative for sells
    price: int  # hundredths of a cent a share
    amount: int  # cents; positive where cash leaves the account
    fees: int = 0  # cents


def _buy(rng: random.Random, day: date, a: int, s: int, price: int, hold: dict, fractional: bool) -> Move:
    if fractional:
        amount = rng.randrange(5000, 300_000)
        quantity = amount * 100_000 // price  # thousandths of a share
        amount = quantity * price // 100_000
    else:
        quantity = rng.randrange(1, 60) * 1000
        amount = quantity * price // 100_000
    fees = rng.choice((0, 0, 0, 0, 495)) if not fractional else 0
    hold[a, s] = hold.get((a, s), 0) + quantity
    return Move(day, a, s, "buy", "buy", quantity, price, amount + fees, fees)


def _sell(rng: random.Random, day: date, a: int, s: int, price: int, hold: dict) -> Move | None:
    held = hold.get((a, s), 0)
    if held < 1000:
        return None
    quantity = held if rng.random() < 0.3 else max(1000, int(held * rng.uniform(0.2, 0.8)) // 1000 * 1000)
    hold[a, s] = held - quantity
    return Move(day, a, s, "sell", "sell", -quantity, price, -(quantity * price // 100_000), 0)


def _order(rng: random.Random, day: date, a: int, s: int, price: int, hold: dict) -> Move:
    """A sale now and then where there are shares to sell, else a purchase."""
    sold = _sell(rng, day, a, s, price, hold) if rng.random() < 0.25 else None
    return sold or _buy(rng, day, a, s, price, hold, _SECURITIES[s][2] == "mutual fund")


def _dividends(
    rng: random.Random, day: date, s: int, price: int, hold: dict, accounts: list[int]
) -> list[Move]:
    out = []
    per_share = _SECURITIES[s][4]
    for a in accounts:
        held = hold.get((a, s), 0)
        cents = held * per_share // 1000
        if cents <= 0:
            continue
        out.append(Move(day, a, s, "cash", "dividend", 0, 0, -cents))
        if _PLAID_ACCOUNTS[a][3]:
            quantity = cents * 100_000 // price
            if quantity > 0:
                hold[a, s] = held + quantity
                out.append(
                    Move(
                        day + timedelta(days=1), a, s, "buy", "dividend reinvestment", quantity, price, cents
                    )
                )
    return out


def _dev_moves(seed: str, n: int) -> tuple[list[Move], list[int], list[int], date]:
    rng = random.Random(f"{seed}/{n}")
    accounts = sorted(rng.sample(range(len(_PLAID_ACCOUNTS)), min(4, max(1, 1 + n // 25))))
    securities = sorted(rng.sample(range(len(_SECURITIES)), min(len(_SECURITIES), max(2, 2 + n // 10))))
    weights = [_SECURITIES[s][5] * rng.uniform(0.4, 1.8) for s in securities]
    prices = {s: _SECURITIES[s][3] * 100 * rng.uniform(0.85, 1.15) for s in securities}
    pays = {s: rng.randrange(0, 90) for s in securities}  # the day of the quarter each pays on
    day = date(2023, 10, 2) + timedelta(days=rng.randrange(0, 200))
    hold: dict = {}
    moves: list[Move] = []
    while len(moves) < n:
        day += timedelta(days=1)
        for s in securities:
            prices[s] *= rng.gauss(1.0003, 0.012)
        if day.weekday() >= 5:
            continue
        for s in securities:
            if (day.toordinal() - pays[s]) % 91 == 0 and _SECURITIES[s][4]:
                moves += _dividends(rng, day, s, round(prices[s]), hold, accounts)
        for _ in range(rng.choices((0, 1, 2, 3), (3, 4, 2, 1))[0]):
            a = rng.choice(accounts)
            s = rng.choices(securities, weights)[0]
            moves.append(_order(rng, day, a, s, round(prices[s]), hold))
        if rng.random() < 0.06:
            a = rng.choice(accounts)
            subtype = "deposit" if _PLAID_ACCOUNTS[a][2] == "brokerage" else "contribution"
            moves.append(Move(day, a, None, "cash", subtype, 0, 0, -rng.randrange(10, 70) * 10_000))
        if rng.random() < 0.03:
            moves.append(
                Move(
                    day,
                    rng.choice(accounts),
                    None,
                    "fee",
                    "account fee",
                    0,
                    0,
                    rng.choice((2500, 5000, 7500)),
                )
            )
    return moves[:n], accounts, securities, day


def _plaid_name(m: Move) -> str:
    if m.security is None:
        return {"deposit": "ELECTRONIC FUNDS TRANSFER RECEIVED", "contribution": "CONTRIBUTION"}.get(
            m.subtype, "ACCOUNT FEE"
        )
    name = _SECURITIES[m.security][1]
    prefix = {
        "buy": "BUY",
        "sell": "SELL",
        "dividend": "DIVIDEND RECEIVED",
        "dividend reinvestment": "REINVESTMENT",
    }[m.subtype]
    return f"{prefix} {name}"


def _response(moves: list[Move], accounts: list[int], securities: list[int], last: date, seed: str) -> dict:
    rng = random.Random(seed)
    account_ids = {a: _plaid_id(rng) for a in accounts}
    security_ids = {s: _plaid_id(rng) for s in securities}
    txns = []
    for m in sorted(moves, key=lambda m: m.day, reverse=True):
        txns.append(
            {
                "account_id": account_ids[m.account],
                "amount": m.amount / 100,
                "cancel_transaction_id": None,
                "date": m.day.isoformat(),
                "fees": m.fees / 100,
                "investment_transaction_id": _plaid_id(rng),
                "iso_currency_code": "USD",
                "name": _plaid_name(m),
                "price": m.price / 10_000,
                "quantity": m.quantity / 1000,
                "security_id": None if m.security is None else security_ids[m.security],
                "subtype": m.subtype,
                "type": m.type,
                "unofficial_currency_code": None,
            }
        )
    return {
        "accounts": [_plaid_account(rng, a, account_ids[a]) for a in accounts],
        "investment_transactions": txns,
        "item": {
            "available_products": ["balance", "identity", "transactions"],
            "billed_products": ["investments"],
            "consent_expiration_time": None,
            "error": None,
            "institution_id": "ins_12",
            "item_id": _plaid_id(rng),
            "update_type": "background",
            "webhook": "https://hooks.example.com/plaid",
        },
        "request_id": _plaid_id(rng, 15),
        "securities": [_plaid_security(s, security_ids[s], last) for s in securities],
        "total_investment_transactions": len(txns),
    }


def _plaid_account(rng: random.Random, a: int, ident: str) -> dict:
    name, official, subtype, _ = _PLAID_ACCOUNTS[a]
    current = round(rng.uniform(2000, 150_000), 2)
    return {
        "account_id": ident,
        "balances": {
            "available": round(current * rng.uniform(0.01, 0.1), 2),
            "current": current,
            "iso_currency_code": "USD",
            "limit": None,
            "unofficial_currency_code": None,
        },
        "mask": f"{rng.randrange(10000):04d}",
        "name": name,
        "official_name": official,
        "subtype": subtype,
        "type": "investment",
    }


_INDUSTRY = {  # sector, industry
    "AAPL": ("Electronic Technology", "Telecommunications Equipment"),
    "MSFT": ("Technology Services", "Packaged Software"),
    "NVDA": ("Electronic Technology", "Semiconductors"),
    "KO": ("Consumer Non-Durables", "Beverages: Non-Alcoholic"),
}


def _plaid_security(s: int, ident: str, last: date) -> dict:
    ticker, name, kind, cents, _, _, mic = _SECURITIES[s]
    return {
        "close_price": cents / 100,
        "close_price_as_of": last.isoformat(),
        "cusip": None,
        "fixed_income": None,
        "industry": _INDUSTRY.get(ticker, (None, None))[1],
        "institution_id": None,
        "institution_security_id": None,
        "is_cash_equivalent": False,
        "isin": None,
        "iso_currency_code": "USD",
        "market_identifier_code": mic,
        "name": name,
        "option_contract": None,
        "proxy_security_id": None,
        "sector": _INDUSTRY.get(ticker, (None, None))[0],
        "security_id": ident,
        "sedol": None,
        "ticker_symbol": ticker,
        "type": kind,
        "unofficial_currency_code": None,
        "update_datetime": None,
    }


# -- the test activity statement ----------------------------------------------------------------

_STOCKS = (  # symbol, description, currency, price and dividend in cents, conid, ISIN, exchange, tax
    ("AAPL", "APPLE INC", "USD", 18500, 24, 265598, "US0378331005", "NASDAQ", "US", 15),
    ("MSFT", "MICROSOFT CORP", "USD", 41000, 75, 272093, "US5949181045", "NASDAQ", "US", 15),
    ("V", "VISA INC-CLASS A SHARES", "USD", 27500, 52, 49462172, "US92826C8394", "NYSE", "US", 15),
    ("VT", "VANGUARD TOT WORLD STK ETF", "USD", 11000, 62, 52197301, "US9220427424", "ARCA", "US", 15),
    ("VTI", "VANGUARD TOTAL STOCK MKT ETF", "USD", 25600, 91, 12340038, "US9229087690", "ARCA", "US", 15),
    ("KO", "COCA-COLA CO/THE", "USD", 6000, 48, 8894, "US1912161007", "NYSE", "US", 15),
    ("ASML", "ASML HOLDING NV", "EUR", 88000, 152, 117589399, "NL0010273215", "AEB", "NL", 15),
    ("SAP", "SAP SE", "EUR", 17500, 220, 14204, "DE0007164600", "IBIS", "DE", 26),
    ("AIR", "AIRBUS SE", "EUR", 15000, 180, 12228130, "NL0000235190", "SBF", "FR", 25),
)


@dataclass
class Fill:
    stock: int
    when: datetime
    quantity: int  # negative: a sale
    price: int  # cents
    close: int  # the day's closing price, cents
    comm: int  # cents, negative
    basis: int  # cents
    realized: int  # cents
    lots: list[tuple[date, int, int, int, int]]  # closed: opened, quantity, price, basis, realized

    @property
    def proceeds(self) -> int:
        return -self.quantity * self.price


@dataclass
class Payout:
    stock: int
    day: date
    gross: int  # cents
    tax: int  # cents, positive


def _sell_fifo(lots: list[list], quantity: int, net: int) -> tuple[int, int, list]:
    """Close ``quantity`` shares of the oldest lots: the basis, the realized P/L and the lots closed."""
    left, basis, closed = quantity, 0, []
    while left:
        lot = lots[0]
        take = min(left, lot[1])
        cost = round(lot[3] * take / lot[1])
        closed.append([lot[0], take, lot[2], cost])
        basis += cost
        lot[1] -= take
        lot[3] -= cost
        left -= take
        if not lot[1]:
            lots.pop(0)
    realized = net - basis
    out, given = [], 0
    for k, (opened, take, price, cost) in enumerate(closed):
        share = realized - given if k == len(closed) - 1 else round(realized * cost / basis)
        given += share
        out.append((opened, take, price, cost, share))
    return basis, realized, out


def _trade(rng: random.Random, s: int, when: datetime, price: int, lots: dict) -> Fill | None:
    mine = lots.setdefault(s, [])
    held = sum(lot[1] for lot in mine)
    comm = -(rng.choice((100, 100, 125, 200)) if _STOCKS[s][2] == "USD" else rng.choice((300, 400, 525)))
    close = round(price * rng.uniform(0.98, 1.02))
    if held and rng.random() < 0.35:
        quantity = held if rng.random() < 0.4 else max(1, round(held * rng.uniform(0.2, 0.7)))
        net = quantity * price + comm
        basis, realized, closed = _sell_fifo(mine, quantity, net)
        return Fill(s, when, -quantity, price, close, comm, -basis, realized, closed)
    quantity = rng.randrange(1, 80) * (10 if _STOCKS[s][3] < 10000 and rng.random() < 0.3 else 1)
    cost = quantity * price - comm
    mine.append([when.date(), quantity, price, cost])
    return Fill(s, when, quantity, price, close, comm, cost, 0, [])


def _test_fills(seed: str, n: int) -> tuple[list[Fill], list[Payout], date, date]:
    rng = random.Random(f"{seed}/{n}")
    first = date(2024, 1, 1) if rng.random() < 0.5 else date(2024, 7, 1)
    last = date(first.year, first.month + 5, 30 if first.month == 1 else 31)
    stocks = sorted(rng.sample(range(len(_STOCKS)), min(len(_STOCKS), max(3, 2 + n // 12))))
    weights = [rng.uniform(0.3, 2.0) for _ in stocks]
    prices = {s: _STOCKS[s][3] * rng.uniform(0.85, 1.15) for s in stocks}
    lots: dict = {}
    fills: list[Fill] = []
    payouts: list[Payout] = []
    pays = {s: rng.randrange(0, 91) for s in stocks}
    days = (last - first).days + 1
    per_day = n / (days * 5 / 7)
    day = first
    while day <= last:
        for s in stocks:
            prices[s] *= rng.gauss(1.0003, 0.013)
            held = sum(lot[1] for lot in lots.get(s, []))
            if held and (day.toordinal() - pays[s]) % 91 == 0:
                gross = held * _STOCKS[s][4]
                payouts.append(Payout(s, day, gross, round(gross * _STOCKS[s][9] / 100)))
        if day.weekday() < 5:
            for _ in range(int(per_day) + (rng.random() < per_day % 1)):
                s = rng.choices(stocks, weights)[0]
                usd = _STOCKS[s][2] == "USD"
                when = datetime.combine(day, datetime.min.time()) + timedelta(
                    hours=9 if usd else 3,
                    minutes=rng.randrange(30, 390) if usd else rng.randrange(0, 510),
                    seconds=rng.randrange(60),
                )
                fill = _trade(rng, s, when, round(prices[s]), lots)
                if fill is not None:
                    fills.append(fill)
        day += timedelta(days=1)
    return fills, payouts, first, last


def _num(cents: int) -> str:
    text = f"{cents / 100:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _qty(q: int) -> str:
    return f"{q:,}"


def _statement(fills: list[Fill], payouts: list[Payout], first: date, last: date, seed: str) -> str:
    rng = random.Random(seed)
    fx = rng.uniform(1.06, 1.12)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    name = rng.choice(("Anna Keller", "Lukas Meyer", "Sofia Rossi", "Pieter de Vries", "Marta Nowak"))
    rows = [
        ["Statement", "Header", "Field Name", "Field Value"],
        ["Statement", "Data", "BrokerName", "Interactive Brokers Ireland Limited"],
        ["Statement", "Data", "BrokerAddress", "10 Earlsfort Terrace, Dublin, D02 T380, Ireland"],
        ["Statement", "Data", "Title", "Activity Statement"],
        [
            "Statement",
            "Data",
            "Period",
            f"{first:%B} {first.day}, {first.year} - {last:%B} {last.day}, {last.year}",
        ],
        [
            "Statement",
            "Data",
            "WhenGenerated",
            f"{last + timedelta(days=2)}, 04:{rng.randrange(60):02d}:{rng.randrange(60):02d} EDT",
        ],
        ["Account Information", "Header", "Field Name", "Field Value"],
        ["Account Information", "Data", "Name", name],
        ["Account Information", "Data", "Account", f"U{rng.randrange(10**6, 10**7)}"],
        ["Account Information", "Data", "Account Type", "Individual"],
        ["Account Information", "Data", "Customer Type", "Individual"],
        ["Account Information", "Data", "Account Capabilities", "Margin"],
        ["Account Information", "Data", "Base Currency", "USD"],
    ]
    head = ["Trades", "Header", "DataDiscriminator", "Asset Category", "Currency", "Symbol", "Date/Time",
            "Quantity", "T. Price", "C. Price", "Proceeds", "Comm/Fee", "Basis", "Realized P/L", "MTM P/L",
            "Code"]  # fmt: skip
    rows.append(head)
    for currency in ("EUR", "USD"):
        mine = sorted(
            (f for f in fills if _STOCKS[f.stock][2] == currency), key=lambda f: (_STOCKS[f.stock][0], f.when)
        )
        if not mine:
            continue
        sums = [0, 0, 0, 0, 0]
        for symbol in sorted({_STOCKS[f.stock][0] for f in mine}):
            part = [f for f in mine if _STOCKS[f.stock][0] == symbol]
            sub = [0, 0, 0, 0, 0]
            for f in part:
                mtm = (f.close - f.price) * f.quantity
                values = [f.proceeds, f.comm, f.basis, f.realized, mtm]
                sub = [a + b for a, b in zip(sub, values, strict=True)]
                rows.append(
                    ["Trades", "Data", "Order", "Stocks", currency, symbol, f"{f.when:%Y-%m-%d, %H:%M:%S}",
                     _qty(f.quantity),
                     _num(f.price), _num(f.close), *map(_num, values), "C" if f.quantity < 0 else "O"]
                )  # fmt: skip
                for opened, take, price, cost, realized in f.lots:
                    held = "LT" if (f.when.date() - opened).days > 365 else "ST"
                    rows.append(
                        ["Trades", "Data", "ClosedLot", "Stocks", currency, symbol, f"{opened}", _qty(take),
                         _num(price),
                         "", "", "", _num(cost), _num(realized), "", held]
                    )  # fmt: skip
            quantity = sum(f.quantity for f in part)
            rows.append(
                [
                    "Trades",
                    "SubTotal",
                    "",
                    "Stocks",
                    currency,
                    symbol,
                    "",
                    _qty(quantity),
                    "",
                    "",
                    *map(_num, sub),
                    "",
                ]
            )
            sums = [a + b for a, b in zip(sums, sub, strict=True)]
        rows.append(["Trades", "Total", "", "Stocks", currency, "", "", "", "", "", *map(_num, sums), ""])
        if currency != "USD":
            rows.append(
                [
                    "Trades",
                    "Total",
                    "",
                    "Stocks",
                    "Total in USD",
                    "",
                    "",
                    "",
                    "",
                    "",
                    *(_num(round(x * fx)) for x in sums),
                    "",
                ]
            )
    rows += _payout_rows(payouts, fx)
    rows.append(["Deposits & Withdrawals", "Header", "Currency", "Settle Date", "Description", "Amount"])
    deposits = [(first + timedelta(days=rng.randrange(0, 20)), rng.randrange(20, 120) * 100_000)]
    for day, cents in deposits:
        rows.append(
            ["Deposits & Withdrawals", "Data", "USD", f"{day}", "Electronic Fund Transfer", _num(cents)]
        )
    rows.append(["Deposits & Withdrawals", "Data", "Total", "", "", _num(sum(c for _, c in deposits))])
    rows.append(["Fees", "Header", "Subtitle", "Currency", "Date", "Description", "Amount"])
    month, fees = first, 0
    while month <= last:
        rows.append(["Fees", "Data", "Other Fees", "USD", f"{month + timedelta(days=2)}",
                     f"E*****{rng.randrange(100):02d}:NYSE NETWORK A (NP,L1) FOR {month:%b %Y}".upper(),
                     "-1.5"])  # fmt: skip
        fees += 150
        month = date(month.year + month.month // 12, month.month % 12 + 1, 1)
    rows.append(["Fees", "Data", "Total", "", "", "", _num(-fees)])
    rows.append(["Financial Instrument Information", "Header", "Asset Category", "Symbol", "Description",
                 "Conid",
                 "Security ID", "Listing Exch", "Multiplier", "Type", "Code"])  # fmt: skip
    for s in sorted({f.stock for f in fills}, key=lambda s: _STOCKS[s][0]):
        symbol, description, _, _, _, conid, isin, exchange, _, _ = _STOCKS[s]
        kind = "ETF" if "ETF" in description else "COMMON"
        rows.append(["Financial Instrument Information", "Data", "Stocks", symbol, description, str(conid),
                     isin,
                     exchange, "1", kind, ""])  # fmt: skip
    w.writerows(rows)
    return buf.getvalue()


def _dividend_text(p: Payout) -> str:
    symbol, _, currency, _, per_share, _, isin, *_ = _STOCKS[p.stock]
    return f"{symbol}({isin}) Cash Dividend {currency} {per_share / 100:.2f} per Share"


def _payout_rows(payouts: list[Payout], fx: float) -> list[list[str]]:
    rows = [["Dividends", "Header", "Currency", "Date", "Description", "Amount"]]
    tax = [["Withholding Tax", "Header", "Currency", "Date", "Description", "Amount", "Code"]]
    gross_usd = tax_usd = 0
    for currency in ("EUR", "USD"):
        mine = sorted(
            (p for p in payouts if _STOCKS[p.stock][2] == currency),
            key=lambda p: (p.day, _STOCKS[p.stock][0]),
        )
        if not mine:
            continue
        for p in mine:
            rows.append(
                [
                    "Dividends",
                    "Data",
                    currency,
                    f"{p.day}",
                    f"{_dividend_text(p)} (Ordinary Dividend)",
                    _num(p.gross),
                ]
            )
            country = _STOCKS[p.stock][8]
            tax.append(
                [
                    "Withholding Tax",
                    "Data",
                    currency,
                    f"{p.day}",
                    f"{_dividend_text(p)} - {country} Tax",
                    _num(-p.tax),
                    "",
                ]
            )
        gross, withheld = sum(p.gross for p in mine), sum(p.tax for p in mine)
        rate = fx if currency != "USD" else 1.0
        rows.append(["Dividends", "Data", "Total", "", "", _num(gross)])
        tax.append(["Withholding Tax", "Data", "Total", "", "", _num(-withheld), ""])
        if currency != "USD":
            rows.append(["Dividends", "Data", "Total in USD", "", "", _num(round(gross * rate))])
            tax.append(["Withholding Tax", "Data", "Total in USD", "", "", _num(-round(withheld * rate)), ""])
        gross_usd += round(gross * rate)
        tax_usd += round(withheld * rate)
    rows.append(["Dividends", "Data", "Total Dividends in USD", "", "", _num(gross_usd)])
    tax.append(["Withholding Tax", "Data", "Total Withholding Tax in USD", "", "", _num(-tax_usd), ""])
    return rows + tax


def _fit(split: str, seed: str, chars: int) -> tuple[object, object, int]:
    """The transactions (or trades) nearest the size asked for, of a few tries."""
    per = 560 if split == "dev" else 120
    n = max(6, chars // per)
    best: tuple[float, object, object, int] | None = None
    for _ in range(8):
        if split == "dev":
            data: object = _dev_moves(seed, n)
            context: object = _response(*data, seed)
            count = len(data[0])
        else:
            data = _test_fills(seed, n)
            context = _statement(*data, seed)
            count = len(data[0])
        size = len(as_text(context))
        miss = abs(size - chars) / chars
        if best is None or miss < best[0]:
            best = (miss, data, context, count)
        if 0.9 * chars <= size <= 1.1 * chars:
            break
        n = max(3, round(n * chars / size))
    assert best is not None
    return best[1], best[2], best[3]


# -- questions ----------------------------------------------------------------------------------


def _account(a: int) -> str:
    return _PLAID_ACCOUNTS[a][0]


def _dev_count(rng: random.Random, data: tuple) -> _Asked:
    moves, *_ = data
    if rng.random() < 0.5:
        m = rng.choice([m for m in moves if m.subtype == "buy"] or moves)
        if m.security is None:
            return None
        ticker = _SECURITIES[m.security][0]
        n = sum(x.account == m.account and x.security == m.security and x.subtype == "buy" for x in moves)
        q = (
            f'How many purchases of {ticker} were made in the account named "{_account(m.account)}", '
            "leaving out "
            "dividend reinvestments?"
        )
        return q, n, {"account": _account(m.account), "ticker": ticker}
    m = rng.choice([m for m in moves if m.subtype == "dividend"] or moves)
    month = f"{m.day:%Y-%m}"
    n = sum(x.account == m.account and x.subtype == "dividend" and f"{x.day:%Y-%m}" == month for x in moves)
    q = f'How many dividends were paid into the account named "{_account(m.account)}" in {m.day:%B %Y}?'
    return q, n, {"account": _account(m.account), "month": month}


def _dev_total(rng: random.Random, data: tuple) -> _Asked:
    moves, *_ = data
    if rng.random() < 0.5:
        m = rng.choice([m for m in moves if m.subtype == "dividend"] or moves)
        if m.security is None:
            return None
        name = _SECURITIES[m.security][1]
        cents = -sum(x.amount for x in moves if x.security == m.security and x.subtype == "dividend")
        q = f"What dividends did {name} pay across all the accounts, in dollars?"
        return q, cents / 100, {"security": name}
    m = rng.choice([m for m in moves if m.type in ("buy", "sell")] or moves)
    if m.security is None:
        return None
    ticker = _SECURITIES[m.security][0]
    shares = sum(x.quantity for x in moves if x.account == m.account and x.security == m.security)
    q = (
        f'By how many shares did the holding of {ticker} in the account named "{_account(m.account)}" '
        "grow over these "
        "transactions (purchases and reinvestments less sales)? Three decimals."
    )
    return None if shares <= 0 else (q, shares / 1000, {"account": _account(m.account), "ticker": ticker})


def _dev_top(rng: random.Random, data: tuple) -> _Asked:
    moves, accounts, _, _ = data
    totals: Counter = Counter()
    if rng.random() < 0.5:
        a = rng.choice(accounts)
        for x in moves:
            if x.account == a and x.type == "buy":
                totals[_SECURITIES[x.security][0]] += x.amount
        top = _leader(totals)
        q = (
            f'On which security, by ticker, did the account named "{_account(a)}" spend the most in buy '
            "transactions?"
        )
        return None if top is None else (q, top, {"account": _account(a), "by": "bought"})
    for x in moves:
        if x.subtype == "dividend":
            totals[_SECURITIES[x.security][0]] += -x.amount
    top = _leader(totals)
    q = "Which security paid the most in dividends over all the accounts? Give its ticker."
    return None if top is None else (q, top, {"by": "dividends"})


def _dev_lookup(rng: random.Random, data: tuple) -> _Asked:
    moves, *_ = data
    traded = [m for m in moves if m.type in ("buy", "sell")]
    if not traded:
        return None
    days = Counter((m.account, m.day, m.type) for m in traded)
    sells = [m for m in traded if m.type == "sell" and days[m.account, m.day, m.type] == 1]
    if sells and rng.random() < 0.5:
        m = rng.choice(sells)
        q = f'Which security did the account named "{_account(m.account)}" sell on {m.day}? Give its ticker.'
        params = {"account": _account(m.account), "date": m.day.isoformat(), "type": m.type}
        return q, _SECURITIES[m.security][0], {**params, "field": "ticker"}
    m = rng.choice(traded)
    ticker = _SECURITIES[m.security][0]
    if (
        sum(
            x.account == m.account and x.day == m.day and x.type == m.type and x.security == m.security
            for x in traded
        )
        != 1
    ):
        return None
    verb = "bought" if m.type == "buy" else "sold"
    q = (
        f'At what price per share was {ticker} {verb} in the account named "{_account(m.account)}" '
        f"on {m.day}?"
    )
    params = {"account": _account(m.account), "date": m.day.isoformat(), "type": m.type, "ticker": ticker}
    return q, m.price / 10_000, {**params, "field": "price"}


def _symbol(s: int) -> str:
    return _STOCKS[s][0]


def _test_count(rng: random.Random, data: tuple) -> _Asked:
    fills, *_ = data
    f = rng.choice(fills)
    if rng.random() < 0.5:
        n = sum(x.stock == f.stock for x in fills)
        q = f"Count the trades (Order rows) in {_symbol(f.stock)} in this statement."
        return q, n, {"symbol": _symbol(f.stock)}
    sells = [x for x in fills if x.quantity < 0] or [f]
    month = f"{rng.choice(sells).when:%Y-%m}"
    n = sum(x.quantity < 0 and x.realized < 0 and f"{x.when:%Y-%m}" == month for x in fills)
    label = datetime.strptime(month, "%Y-%m")
    q = f"Tally the closing trades executed in {label:%B %Y} whose Realized P/L was a loss."
    return q, n, {"month": month}


def _test_total(rng: random.Random, data: tuple) -> _Asked:
    fills, payouts, _, _ = data
    if rng.random() < 0.5 or not payouts:
        s = rng.choice(fills).stock
        cents = -sum(x.comm for x in fills if x.stock == s)
        q = f"Sum the commissions paid on the {_symbol(s)} trades, as a positive amount in their currency."
        return q, cents / 100, {"symbol": _symbol(s), "field": "Comm/Fee"}
    s = rng.choice(payouts).stock
    cents = sum(p.gross - p.tax for p in payouts if p.stock == s)
    q = f"Give {_symbol(s)}'s dividends net of the tax withheld from them, in the currency they were paid in."
    return q, cents / 100, {"symbol": _symbol(s), "field": "dividends"}


def _test_top(rng: random.Random, data: tuple) -> _Asked:
    fills, payouts, _, _ = data
    totals: Counter = Counter()
    if rng.random() < 0.5 or not payouts:
        for x in fills:
            if _STOCKS[x.stock][2] == "USD" and x.quantity < 0:
                totals[_symbol(x.stock)] += x.realized
        top = _leader(totals)
        if top is None or totals[top] <= 0:
            return None
        q = "Find the dollar-traded symbol whose trades realized the largest total profit (Realized P/L)."
        return q, top, {"currency": "USD", "by": "realized"}
    currency = _STOCKS[rng.choice(payouts).stock][2]
    for p in payouts:
        if _STOCKS[p.stock][2] == currency:
            totals[_symbol(p.stock)] += p.gross
    top = _leader(totals)
    q = f"Name the symbol that paid the most in dividends before tax among those paid in {currency}."
    return None if top is None else (q, top, {"currency": currency, "by": "dividends"})


def _test_lookup(rng: random.Random, data: tuple) -> _Asked:
    fills, *_ = data
    f = rng.choice(fills)
    if rng.random() < 0.5:
        stamp = f"{f.when:%Y-%m-%d, %H:%M:%S}"
        if sum(x.stock == f.stock and x.when == f.when for x in fills) != 1:
            return None
        q = f"Report the T. Price of the {_symbol(f.stock)} trade executed at {stamp}."
        return q, f.price / 100, {"symbol": _symbol(f.stock), "when": stamp, "field": "T. Price"}
    q = f"Give the Conid that the statement lists for {_symbol(f.stock)}."
    return q, _STOCKS[f.stock][5], {"symbol": _symbol(f.stock), "field": "Conid"}


_DEV = {"count": _dev_count, "total": _dev_total, "top": _dev_top, "lookup": _dev_lookup}
_TEST = {"count": _test_count, "total": _test_total, "top": _test_top, "lookup": _test_lookup}


@family(
    "trades",
    "investment trades: an aggregation API's investment transactions with their accounts and securities as "
    "a nested dict (dev), or a broker's activity statement CSV as a string (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    data, context, count = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]
    asks = _DEV if ref.split == "dev" else _TEST

    def ask(kind_: str) -> _Asked:
        return asks[kind_](rng, data)

    kind, asked = draw_question(ask, kind, "lookup", nonzero=True, hidden=True)
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="nested dict (investment transactions)"
        if ref.split == "dev"
        else "string (activity statement CSV)",
        transactions=count,
    )
