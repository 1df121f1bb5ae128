"""Deterministic generator of the worldbank family's local "API" data (fixtures.json).

A World-Bank-Indicators-like world: 113 countries (real names, ISO codes, regions and income
levels; World Bank spellings such as "Egypt, Arab Rep.") and 17 aggregates (World, income groups,
regions, EU, OECD, IDA, Arab World) with yearly series 1995-2023 of four indicators: population
(persons), GDP (current US$), GDP per capita (current US$) and life expectancy (years). The
series are generated (a growth path from an approximate 2010 level, with noise), not the World
Bank's figures. Quirks: about 5 % of values are null, the latest year is missing for about 45 %
of series (not yet published) and the first years for some; aggregates are sums or
population-weighted means of their members, so they dwarf every country. Only
`random.Random(<int>)` is used, so the committed file regenerates bit-exactly.
"""

from __future__ import annotations

import math
import random
from typing import Any

FIXTURE_SEED = 20240901
FIRST_YEAR, LAST_YEAR = 1995, 2023
YEARS = tuple(range(FIRST_YEAR, LAST_YEAR + 1))
NULL_SHARE = 0.05
LATEST_NULL_SHARE = 0.45  # the last year is often not published yet
EARLY_NULL_SHARE = 0.15  # the first two years are sometimes missing

# code -> (name, unit, decimals of the raw value)
INDICATORS: dict[str, tuple[str, str, int]] = {
    "SP.POP.TOTL": ("Population, total", "persons", 0),
    "NY.GDP.MKTP.CD": ("GDP (current US$)", "current US$", 0),
    "NY.GDP.PCAP.CD": ("GDP per capita (current US$)", "current US$", 2),
    "SP.DYN.LE00.IN": ("Life expectancy at birth, total (years)", "years", 3),
}
REGIONS: dict[str, str] = {
    "EAS": "East Asia & Pacific", "ECS": "Europe & Central Asia", "LCN": "Latin America & Caribbean",
    "MEA": "Middle East & North Africa", "NAC": "North America", "SAS": "South Asia", "SSF": "Sub-Saharan Africa",
}
INCOME: dict[str, str] = {"HIC": "High income", "UMC": "Upper middle income", "LMC": "Lower middle income",
                          "LIC": "Low income"}

# (iso3, iso2, World Bank name, region, income, population 2010 (millions), GDP per capita 2010 (US$),
#  life expectancy 2010 (years)) — approximate levels, the series are generated from them.
COUNTRIES: tuple[tuple[str, str, str, str, str, float, float, float], ...] = (
    ("AFG", "AF", "Afghanistan", "SAS", "LIC", 28.2, 560, 60.9),
    ("AGO", "AO", "Angola", "SSF", "LMC", 23.4, 3590, 56.7),
    ("ARG", "AR", "Argentina", "LCN", "UMC", 40.8, 10390, 75.7),
    ("ARM", "AM", "Armenia", "ECS", "UMC", 2.9, 3220, 73.2),
    ("AUS", "AU", "Australia", "EAS", "HIC", 22.0, 52020, 81.7),
    ("AUT", "AT", "Austria", "ECS", "HIC", 8.4, 46900, 80.6),
    ("AZE", "AZ", "Azerbaijan", "ECS", "UMC", 9.1, 5840, 70.8),
    ("BEL", "BE", "Belgium", "ECS", "HIC", 10.9, 44360, 80.2),
    ("BEN", "BJ", "Benin", "SSF", "LMC", 9.4, 1040, 59.1),
    ("BGD", "BD", "Bangladesh", "SAS", "LMC", 147.6, 780, 69.9),
    ("BLR", "BY", "Belarus", "ECS", "UMC", 9.5, 6030, 70.4),
    ("BLZ", "BZ", "Belize", "LCN", "UMC", 0.32, 4310, 72.9),
    ("BOL", "BO", "Bolivia", "LCN", "LMC", 10.0, 1990, 66.4),
    ("BRA", "BR", "Brazil", "LCN", "UMC", 196.4, 11290, 73.6),
    ("CAN", "CA", "Canada", "NAC", "HIC", 34.0, 47560, 81.2),
    ("CHE", "CH", "Switzerland", "ECS", "HIC", 7.8, 77120, 82.2),
    ("CHL", "CL", "Chile", "LCN", "HIC", 17.0, 12810, 78.6),
    ("CHN", "CN", "China", "EAS", "UMC", 1337.7, 4550, 75.2),
    ("CIV", "CI", "Cote d'Ivoire", "SSF", "LMC", 20.5, 1640, 53.9),
    ("CMR", "CM", "Cameroon", "SSF", "LMC", 20.3, 1420, 55.9),
    ("COD", "CD", "Congo, Dem. Rep.", "SSF", "LIC", 64.6, 350, 57.4),
    ("COL", "CO", "Colombia", "LCN", "UMC", 44.8, 6340, 75.8),
    ("CRI", "CR", "Costa Rica", "LCN", "UMC", 4.5, 8200, 79.1),
    ("CUB", "CU", "Cuba", "LCN", "UMC", 11.2, 5730, 78.3),
    ("CYP", "CY", "Cyprus", "ECS", "HIC", 1.1, 31020, 80.4),
    ("CZE", "CZ", "Czechia", "ECS", "HIC", 10.5, 19960, 77.4),
    ("DEU", "DE", "Germany", "ECS", "HIC", 81.8, 41530, 80.0),
    ("DMA", "DM", "Dominica", "LCN", "UMC", 0.07, 7260, 73.4),
    ("DNK", "DK", "Denmark", "ECS", "HIC", 5.5, 58040, 79.1),
    ("DOM", "DO", "Dominican Republic", "LCN", "UMC", 9.7, 5480, 71.4),
    ("DZA", "DZ", "Algeria", "MEA", "LMC", 35.9, 4480, 74.9),
    ("ECU", "EC", "Ecuador", "LCN", "UMC", 15.0, 4630, 75.1),
    ("EGY", "EG", "Egypt, Arab Rep.", "MEA", "LMC", 82.8, 2640, 70.3),
    ("ESP", "ES", "Spain", "ECS", "HIC", 46.6, 30500, 81.6),
    ("EST", "EE", "Estonia", "ECS", "HIC", 1.33, 14640, 75.4),
    ("ETH", "ET", "Ethiopia", "SSF", "LIC", 87.6, 340, 61.6),
    ("FIN", "FI", "Finland", "ECS", "HIC", 5.36, 46460, 79.9),
    ("FRA", "FR", "France", "ECS", "HIC", 65.0, 40640, 81.7),
    ("GAB", "GA", "Gabon", "SSF", "UMC", 1.7, 9360, 61.4),
    ("GBR", "GB", "United Kingdom", "ECS", "HIC", 62.8, 39600, 80.4),
    ("GEO", "GE", "Georgia", "ECS", "UMC", 3.8, 3230, 72.8),
    ("GHA", "GH", "Ghana", "SSF", "LMC", 24.8, 1330, 61.0),
    ("GRC", "GR", "Greece", "ECS", "HIC", 11.1, 26920, 80.4),
    ("GTM", "GT", "Guatemala", "LCN", "UMC", 14.6, 2860, 71.4),
    ("HRV", "HR", "Croatia", "ECS", "HIC", 4.4, 13990, 76.5),
    ("HUN", "HU", "Hungary", "ECS", "HIC", 10.0, 13220, 74.2),
    ("IDN", "ID", "Indonesia", "EAS", "UMC", 241.8, 3120, 69.2),
    ("IND", "IN", "India", "SAS", "LMC", 1234.3, 1350, 66.7),
    ("IRL", "IE", "Ireland", "ECS", "HIC", 4.56, 48670, 80.7),
    ("IRN", "IR", "Iran, Islamic Rep.", "MEA", "LMC", 74.6, 6770, 73.0),
    ("IRQ", "IQ", "Iraq", "MEA", "UMC", 29.7, 4480, 68.8),
    ("ISR", "IL", "Israel", "MEA", "HIC", 7.6, 30660, 81.6),
    ("ITA", "IT", "Italy", "ECS", "HIC", 59.3, 36040, 82.0),
    ("JAM", "JM", "Jamaica", "LCN", "UMC", 2.8, 4920, 74.3),
    ("JOR", "JO", "Jordan", "MEA", "UMC", 7.3, 3650, 73.7),
    ("JPN", "JP", "Japan", "EAS", "HIC", 128.1, 44970, 82.8),
    ("KAZ", "KZ", "Kazakhstan", "ECS", "UMC", 16.3, 9070, 68.3),
    ("KEN", "KE", "Kenya", "SSF", "LMC", 42.0, 1080, 62.1),
    ("KHM", "KH", "Cambodia", "EAS", "LMC", 14.3, 790, 66.6),
    ("KOR", "KR", "Korea, Rep.", "EAS", "HIC", 49.6, 23080, 80.1),
    ("LAO", "LA", "Lao PDR", "EAS", "LMC", 6.3, 1140, 63.9),
    ("LBN", "LB", "Lebanon", "MEA", "LMC", 4.95, 7760, 78.2),
    ("LKA", "LK", "Sri Lanka", "SAS", "LMC", 20.3, 2800, 75.1),
    ("LUX", "LU", "Luxembourg", "ECS", "HIC", 0.51, 108350, 80.6),
    ("MAR", "MA", "Morocco", "MEA", "LMC", 32.3, 2840, 72.9),
    ("MEX", "MX", "Mexico", "LCN", "UMC", 114.1, 9270, 74.9),
    ("MHL", "MH", "Marshall Islands", "EAS", "UMC", 0.05, 3530, 64.5),
    ("MNG", "MN", "Mongolia", "EAS", "LMC", 2.7, 2650, 67.4),
    ("MOZ", "MZ", "Mozambique", "SSF", "LIC", 23.5, 520, 54.4),
    ("MYS", "MY", "Malaysia", "EAS", "UMC", 28.2, 9040, 74.6),
    ("NAM", "NA", "Namibia", "SSF", "UMC", 2.1, 5560, 61.9),
    ("NER", "NE", "Niger", "SSF", "LIC", 16.5, 410, 57.1),
    ("NGA", "NG", "Nigeria", "SSF", "LMC", 158.5, 2280, 50.9),
    ("NIC", "NI", "Nicaragua", "LCN", "LMC", 5.8, 1500, 72.0),
    ("NLD", "NL", "Netherlands", "ECS", "HIC", 16.6, 50950, 80.7),
    ("NOR", "NO", "Norway", "ECS", "HIC", 4.9, 87690, 81.0),
    ("NPL", "NP", "Nepal", "SAS", "LMC", 27.0, 590, 67.2),
    ("NZL", "NZ", "New Zealand", "EAS", "HIC", 4.35, 33690, 80.9),
    ("PAK", "PK", "Pakistan", "SAS", "LMC", 179.4, 990, 64.5),
    ("PAN", "PA", "Panama", "LCN", "HIC", 3.6, 8080, 76.6),
    ("PER", "PE", "Peru", "LCN", "UMC", 29.0, 5080, 74.1),
    ("PHL", "PH", "Philippines", "EAS", "LMC", 94.0, 2220, 69.5),
    ("POL", "PL", "Poland", "ECS", "HIC", 38.0, 12600, 76.2),
    ("PRT", "PT", "Portugal", "ECS", "HIC", 10.6, 22540, 79.0),
    ("PRY", "PY", "Paraguay", "LCN", "UMC", 6.2, 3230, 72.2),
    ("QAT", "QA", "Qatar", "MEA", "HIC", 1.86, 67400, 79.1),
    ("ROU", "RO", "Romania", "ECS", "HIC", 20.2, 8210, 73.5),
    ("RUS", "RU", "Russian Federation", "ECS", "UMC", 142.8, 10680, 68.8),
    ("RWA", "RW", "Rwanda", "SSF", "LIC", 10.3, 580, 63.1),
    ("SAU", "SA", "Saudi Arabia", "MEA", "HIC", 29.4, 18750, 73.7),
    ("SEN", "SN", "Senegal", "SSF", "LMC", 12.7, 1250, 64.3),
    ("SGP", "SG", "Singapore", "EAS", "HIC", 5.1, 47240, 81.5),
    ("SOM", "SO", "Somalia", "SSF", "LIC", 12.0, 380, 53.5),
    ("SVK", "SK", "Slovak Republic", "ECS", "HIC", 5.4, 16700, 75.1),
    ("SVN", "SI", "Slovenia", "ECS", "HIC", 2.05, 23510, 79.4),
    ("SWE", "SE", "Sweden", "ECS", "HIC", 9.4, 52080, 81.5),
    ("SYR", "SY", "Syrian Arab Republic", "MEA", "LIC", 21.4, 2810, 72.6),
    ("THA", "TH", "Thailand", "EAS", "UMC", 67.2, 5080, 75.0),
    ("TKM", "TM", "Turkmenistan", "ECS", "UMC", 5.1, 4440, 66.4),
    ("TUN", "TN", "Tunisia", "MEA", "LMC", 10.6, 4140, 75.0),
    ("TUR", "TR", "Turkiye", "ECS", "UMC", 72.3, 10670, 75.5),
    ("TZA", "TZ", "Tanzania", "SSF", "LMC", 44.3, 730, 59.9),
    ("UGA", "UG", "Uganda", "SSF", "LIC", 32.4, 720, 57.8),
    ("UKR", "UA", "Ukraine", "ECS", "LMC", 45.9, 2970, 70.3),
    ("URY", "UY", "Uruguay", "LCN", "HIC", 3.36, 11940, 76.4),
    ("USA", "US", "United States", "NAC", "HIC", 309.3, 48650, 78.5),
    ("UZB", "UZ", "Uzbekistan", "ECS", "LMC", 28.6, 1630, 69.9),
    ("VEN", "VE", "Venezuela, RB", "LCN", "UMC", 28.4, 13560, 73.6),
    ("VNM", "VN", "Viet Nam", "EAS", "LMC", 87.4, 1680, 74.4),
    ("YEM", "YE", "Yemen, Rep.", "MEA", "LIC", 23.2, 1330, 66.6),
    ("ZAF", "ZA", "South Africa", "SSF", "UMC", 51.2, 7330, 56.5),
    ("ZMB", "ZM", "Zambia", "SSF", "LMC", 13.8, 1490, 56.8),
    ("ZWE", "ZW", "Zimbabwe", "SSF", "LMC", 12.7, 940, 50.6),
)
EU = frozenset({"AUT", "BEL", "CYP", "CZE", "DEU", "DNK", "ESP", "EST", "FIN", "FRA", "GRC", "HRV", "HUN", "IRL",
                "ITA", "LUX", "NLD", "POL", "PRT", "ROU", "SVK", "SVN", "SWE"})
OECD = EU - {"CYP", "HRV", "ROU"} | {"AUS", "CAN", "CHE", "CHL", "COL", "CRI", "GBR", "ISR", "JPN", "KOR", "MEX",
                                    "NOR", "NZL", "TUR", "USA"}
ARAB = frozenset({"DZA", "EGY", "IRQ", "JOR", "LBN", "MAR", "QAT", "SAU", "SOM", "SYR", "TUN", "YEM"})
# (iso3, iso2, name, member test, share of the world outside this fixture it stands for)
AGGREGATES: tuple[tuple[str, str, str, str], ...] = (
    ("WLD", "1W", "World", "all"),
    ("HIC", "XD", "High income", "income:HIC"),
    ("LMY", "XO", "Low & middle income", "income:UMC,LMC,LIC"),
    ("UMC", "XT", "Upper middle income", "income:UMC"),
    ("LMC", "XN", "Lower middle income", "income:LMC"),
    ("LIC", "XM", "Low income", "income:LIC"),
    ("EAS", "Z4", "East Asia & Pacific", "region:EAS"),
    ("ECS", "Z7", "Europe & Central Asia", "region:ECS"),
    ("LCN", "ZJ", "Latin America & Caribbean", "region:LCN"),
    ("MEA", "ZQ", "Middle East & North Africa", "region:MEA"),
    ("NAC", "XU", "North America", "region:NAC"),
    ("SAS", "8S", "South Asia", "region:SAS"),
    ("SSF", "ZG", "Sub-Saharan Africa", "region:SSF"),
    ("EUU", "EU", "European Union", "set:EU"),
    ("OED", "OE", "OECD members", "set:OECD"),
    ("IDA", "XI", "IDA only", "income:LIC"),
    ("ARB", "1A", "Arab World", "set:ARAB"),
)
SETS = {"EU": EU, "OECD": OECD, "ARAB": ARAB}
AGGREGATE_SCALE = 1.18  # aggregates also cover countries this fixture leaves out


def _members(test: str) -> frozenset[str]:
    kind, _, value = test.partition(":")
    if kind == "all":
        return frozenset(c[0] for c in COUNTRIES)
    if kind == "set":
        return SETS[value]
    field = 4 if kind == "income" else 3
    return frozenset(c[0] for c in COUNTRIES if c[field] in value.split(","))


def _paths(rng: random.Random, pop: float, gdppc: float, life: float) -> dict[str, list[float]]:
    """Smooth yearly paths around the 2010 levels (unrounded, no gaps)."""
    growth = rng.uniform(-0.004, 0.03) if pop > 1 else rng.uniform(-0.002, 0.015)
    income_growth = rng.uniform(0.0, 0.07)
    gain = rng.uniform(0.08, 0.35)
    pops, pcs, lives = [], [], []
    shock = 0.0
    for year in YEARS:
        t = year - 2010
        shock = 0.55 * shock + rng.gauss(0.0, 0.045)
        pops.append(pop * 1e6 * (1 + growth) ** t * (1 + rng.gauss(0.0, 0.002)))
        pcs.append(max(150.0, gdppc * (1 + income_growth) ** t * math.exp(shock)))
        lives.append(min(86.0, life + gain * t + rng.gauss(0.0, 0.15)))
    return {"SP.POP.TOTL": pops, "NY.GDP.PCAP.CD": pcs, "SP.DYN.LE00.IN": lives,
            "NY.GDP.MKTP.CD": [p * c for p, c in zip(pops, pcs, strict=True)]}


def _rounded(code: str, value: float) -> float:
    decimals = INDICATORS[code][2]
    return float(round(value)) if decimals == 0 else round(value, decimals)


def _gaps(rng: random.Random, values: list[float], code: str) -> list[float | None]:
    out: list[float | None] = [_rounded(code, v) for v in values]
    for i, year in enumerate(YEARS):
        share = NULL_SHARE
        if year == LAST_YEAR:
            share = LATEST_NULL_SHARE
        elif year - FIRST_YEAR < 2:
            share = EARLY_NULL_SHARE
        if rng.random() < share:
            out[i] = None
    return out


def generate_worldbank_fixtures() -> dict[str, Any]:
    rng = random.Random(FIXTURE_SEED)
    countries, raw = [], {}
    for iso3, iso2, name, region, income, pop, gdppc, life in COUNTRIES:
        raw[iso3] = _paths(rng, pop, gdppc, life)
        countries.append({
            "id": iso3, "iso2Code": iso2, "name": name,
            "region": {"id": region, "value": REGIONS[region]},
            "incomeLevel": {"id": income, "value": INCOME[income]},
            "series": {code: _gaps(rng, raw[iso3][code], code) for code in INDICATORS},
        })
    for iso3, iso2, name, test in AGGREGATES:
        members = sorted(_members(test))
        pops = [sum(raw[m]["SP.POP.TOTL"][i] for m in members) * AGGREGATE_SCALE for i in range(len(YEARS))]
        gdps = [sum(raw[m]["NY.GDP.MKTP.CD"][i] for m in members) * AGGREGATE_SCALE for i in range(len(YEARS))]
        lives = [sum(raw[m]["SP.DYN.LE00.IN"][i] * raw[m]["SP.POP.TOTL"][i] for m in members)
                 / sum(raw[m]["SP.POP.TOTL"][i] for m in members) for i in range(len(YEARS))]
        series = {"SP.POP.TOTL": pops, "NY.GDP.MKTP.CD": gdps,
                  "NY.GDP.PCAP.CD": [g / p for g, p in zip(gdps, pops, strict=True)], "SP.DYN.LE00.IN": lives}
        countries.append({
            "id": iso3, "iso2Code": iso2, "name": name,
            "region": {"id": "NA", "value": "Aggregates"}, "incomeLevel": {"id": "NA", "value": "Aggregates"},
            # Aggregates are published for every year (the gaps are filled by the statisticians).
            "series": {code: [_rounded(code, v) for v in series[code]] for code in INDICATORS},
        })
    return {
        "version": "sim-v1",
        "first_year": FIRST_YEAR,
        "last_year": LAST_YEAR,
        "per_page": 10,
        "per_page_all": 50,
        "lastupdated": "2024-06-28",
        "indicators": {code: {"name": n, "unit": u, "decimal": d} for code, (n, u, d) in INDICATORS.items()},
        "countries": countries,
    }
