"""Deterministic generator of the weather family's local "API" data (fixtures.json).

An Open-Meteo-like world: cities with coordinates (approximate, real places), a geocoding index
and a 16-day daily forecast per city starting 2024-07-01 (maximum / minimum temperature,
precipitation sum, maximum wind speed). Quirks: several cities share a name (Springfield,
Portland, Paris, ...), some names carry accents that the geocoder's ASCII index does not match
(Zürich, São Paulo, Łódź, ...), stations in the United States report imperial units, about 3 %
of daily values are missing (null), and every forecast response carries a summary block computed
over the station's whole 16-day horizon. Only `random.Random(<int>)` is used, so the committed
file regenerates bit-exactly.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Any

FIXTURE_SEED = 20240701
START = date(2024, 7, 1)
HORIZON_DAYS = 16
WINDOW_DAYS = 7
NULL_SHARE = 0.03
VARIABLES = ("temperature_2m_max", "temperature_2m_min", "precipitation_sum", "wind_speed_10m_max")

# (name, ascii name, admin1, country, latitude, longitude, population in thousands)
CITIES: tuple[tuple[str, str, str, str, float, float, int], ...] = (
    # shared names: the geocoder lists them by population, so the requested one is not always first
    ("Springfield", "Springfield", "Missouri", "US", 37.21, -93.29, 169),
    ("Springfield", "Springfield", "Massachusetts", "US", 42.10, -72.59, 155),
    ("Springfield", "Springfield", "Illinois", "US", 39.80, -89.64, 114),
    ("Portland", "Portland", "Oregon", "US", 45.52, -122.68, 652),
    ("Portland", "Portland", "Maine", "US", 43.66, -70.26, 68),
    ("Paris", "Paris", "Île-de-France", "FR", 48.85, 2.35, 2161),
    ("Paris", "Paris", "Texas", "US", 33.66, -95.56, 25),
    ("London", "London", "England", "GB", 51.51, -0.13, 8982),
    ("London", "London", "Ontario", "CA", 42.98, -81.25, 422),
    ("Cambridge", "Cambridge", "Massachusetts", "US", 42.37, -71.11, 118),
    ("Cambridge", "Cambridge", "England", "GB", 52.21, 0.12, 145),
    ("Valencia", "Valencia", "Carabobo", "VE", 10.16, -68.00, 1484),
    ("Valencia", "Valencia", "Valencian Community", "ES", 39.47, -0.38, 792),
    ("Córdoba", "Cordoba", "Córdoba Province", "AR", -31.42, -64.18, 1391),
    ("Córdoba", "Cordoba", "Andalusia", "ES", 37.88, -4.78, 325),
    ("San José", "San Jose", "California", "US", 37.34, -121.89, 1013),
    ("San José", "San Jose", "San José Province", "CR", 9.93, -84.08, 342),
    ("Birmingham", "Birmingham", "England", "GB", 52.49, -1.89, 1144),
    ("Birmingham", "Birmingham", "Alabama", "US", 33.52, -86.80, 200),
    ("Perth", "Perth", "Western Australia", "AU", -31.95, 115.86, 2125),
    ("Perth", "Perth", "Scotland", "GB", 56.40, -3.43, 47),
    ("Hamilton", "Hamilton", "Ontario", "CA", 43.26, -79.87, 569),
    ("Hamilton", "Hamilton", "Waikato", "NZ", -37.79, 175.28, 179),
    ("Victoria", "Victoria", "British Columbia", "CA", 48.43, -123.37, 92),
    ("Victoria", "Victoria", "Mahé", "SC", -4.62, 55.45, 27),
    ("Alexandria", "Alexandria", "Alexandria Governorate", "EG", 31.20, 29.92, 5200),
    ("Alexandria", "Alexandria", "Virginia", "US", 38.80, -77.05, 159),
    ("Kingston", "Kingston", "Kingston Parish", "JM", 17.97, -76.79, 662),
    ("Kingston", "Kingston", "Ontario", "CA", 44.23, -76.49, 132),
    ("Newcastle", "Newcastle", "New South Wales", "AU", -32.93, 151.78, 322),
    ("Newcastle", "Newcastle", "England", "GB", 54.98, -1.61, 300),
    ("Richmond", "Richmond", "British Columbia", "CA", 49.17, -123.14, 209),
    ("Richmond", "Richmond", "Virginia", "US", 37.54, -77.44, 226),
    ("Manchester", "Manchester", "England", "GB", 53.48, -2.24, 553),
    ("Manchester", "Manchester", "New Hampshire", "US", 42.99, -71.46, 115),
    ("Athens", "Athens", "Attica", "GR", 37.98, 23.73, 664),
    ("Athens", "Athens", "Georgia", "US", 33.96, -83.38, 127),
    ("Dublin", "Dublin", "Leinster", "IE", 53.35, -6.26, 592),
    ("Dublin", "Dublin", "Ohio", "US", 40.10, -83.11, 49),
    ("Rome", "Rome", "Lazio", "IT", 41.90, 12.50, 2873),
    ("Rome", "Rome", "Georgia", "US", 34.26, -85.16, 37),
    ("Lima", "Lima", "Lima Region", "PE", -12.05, -77.04, 9752),
    ("Lima", "Lima", "Ohio", "US", 40.74, -84.11, 35),
    ("Mérida", "Merida", "Yucatán", "MX", 20.97, -89.62, 921),
    ("Mérida", "Merida", "Mérida", "VE", 8.59, -71.14, 345),
    ("Mérida", "Merida", "Extremadura", "ES", 38.92, -6.34, 60),
    ("León", "Leon", "Guanajuato", "MX", 21.12, -101.68, 1579),
    ("León", "Leon", "Castile and León", "ES", 42.60, -5.57, 124),
    ("Durham", "Durham", "North Carolina", "US", 35.99, -78.90, 283),
    ("Durham", "Durham", "England", "GB", 54.78, -1.57, 48),
    # accented names (the geocoder indexes the plain spelling)
    ("Zürich", "Zurich", "Zurich", "CH", 47.37, 8.54, 421),
    ("São Paulo", "Sao Paulo", "São Paulo", "BR", -23.55, -46.63, 12325),
    ("Kraków", "Krakow", "Lesser Poland", "PL", 50.06, 19.94, 779),
    ("Malmö", "Malmo", "Skåne", "SE", 55.60, 13.00, 347),
    ("Reykjavík", "Reykjavik", "Capital Region", "IS", 64.15, -21.94, 131),
    ("Bogotá", "Bogota", "Bogotá D.C.", "CO", 4.71, -74.07, 7181),
    ("Montréal", "Montreal", "Quebec", "CA", 45.50, -73.57, 1762),
    ("Québec", "Quebec", "Quebec", "CA", 46.81, -71.21, 549),
    ("Düsseldorf", "Dusseldorf", "North Rhine-Westphalia", "DE", 51.23, 6.78, 620),
    ("Genève", "Geneve", "Geneva", "CH", 46.20, 6.14, 203),
    ("Łódź", "Lodz", "Łódź Voivodeship", "PL", 51.76, 19.46, 672),
    ("Gdańsk", "Gdansk", "Pomerania", "PL", 54.35, 18.65, 470),
    ("Brașov", "Brasov", "Brașov County", "RO", 45.66, 25.61, 253),
    ("Málaga", "Malaga", "Andalusia", "ES", 36.72, -4.42, 578),
    ("Nürnberg", "Nurnberg", "Bavaria", "DE", 49.45, 11.08, 518),
    ("Besançon", "Besancon", "Bourgogne-Franche-Comté", "FR", 47.24, 6.02, 116),
    ("Tromsø", "Tromso", "Troms", "NO", 69.65, 18.96, 77),
    ("Göteborg", "Goteborg", "Västra Götaland", "SE", 57.71, 11.97, 583),
    ("Medellín", "Medellin", "Antioquia", "CO", 6.24, -75.58, 2529),
    ("Cancún", "Cancun", "Quintana Roo", "MX", 21.16, -86.85, 888),
    ("Asunción", "Asuncion", "Asunción", "PY", -25.26, -57.58, 525),
    ("Yaoundé", "Yaounde", "Centre", "CM", 3.85, 11.50, 2765),
    ("Linköping", "Linkoping", "Östergötland", "SE", 58.41, 15.62, 164),
    ("Jyväskylä", "Jyvaskyla", "Central Finland", "FI", 62.24, 25.75, 145),
    ("Köln", "Koln", "North Rhine-Westphalia", "DE", 50.94, 6.96, 1084),
    ("München", "Munchen", "Bavaria", "DE", 48.14, 11.58, 1488),
    ("Brasília", "Brasilia", "Federal District", "BR", -15.79, -47.88, 3094),
    ("Santa Fé", "Santa Fe", "Santa Fe Province", "AR", -31.63, -60.70, 391),
    ("Curaçao", "Curacao", "Curaçao", "CW", 12.11, -68.93, 153),
    ("Tórshavn", "Torshavn", "Streymoy", "FO", 62.01, -6.77, 14),
    # plain names
    ("Tokyo", "Tokyo", "Tokyo", "JP", 35.68, 139.69, 13960), ("Delhi", "Delhi", "Delhi", "IN", 28.70, 77.10, 16787),
    ("Shanghai", "Shanghai", "Shanghai", "CN", 31.23, 121.47, 24870), ("Cairo", "Cairo", "Cairo", "EG", 30.04, 31.24, 9540),
    ("Mumbai", "Mumbai", "Maharashtra", "IN", 19.08, 72.88, 12478), ("Beijing", "Beijing", "Beijing", "CN", 39.90, 116.41, 21540),
    ("Dhaka", "Dhaka", "Dhaka Division", "BD", 23.81, 90.41, 8906), ("Osaka", "Osaka", "Osaka", "JP", 34.69, 135.50, 2691),
    ("Karachi", "Karachi", "Sindh", "PK", 24.86, 67.01, 14910), ("Istanbul", "Istanbul", "Istanbul", "TR", 41.01, 28.98, 15460),
    ("Lagos", "Lagos", "Lagos State", "NG", 6.52, 3.38, 8048), ("Manila", "Manila", "Metro Manila", "PH", 14.60, 120.98, 1780),
    ("Moscow", "Moscow", "Moscow", "RU", 55.76, 37.62, 12506), ("Jakarta", "Jakarta", "Jakarta", "ID", -6.21, 106.85, 10562),
    ("Seoul", "Seoul", "Seoul", "KR", 37.57, 126.98, 9776), ("Bangkok", "Bangkok", "Bangkok", "TH", 13.76, 100.50, 10539),
    ("Chennai", "Chennai", "Tamil Nadu", "IN", 13.08, 80.27, 7088), ("Baghdad", "Baghdad", "Baghdad", "IQ", 33.31, 44.36, 7216),
    ("Riyadh", "Riyadh", "Riyadh Region", "SA", 24.71, 46.68, 7676), ("Singapore", "Singapore", "Singapore", "SG", 1.35, 103.82, 5686),
    ("Santiago", "Santiago", "Santiago Metropolitan", "CL", -33.45, -70.67, 6160), ("Sydney", "Sydney", "New South Wales", "AU", -33.87, 151.21, 5312),
    ("Melbourne", "Melbourne", "Victoria", "AU", -37.81, 144.96, 5078), ("Nairobi", "Nairobi", "Nairobi", "KE", -1.29, 36.82, 4397),
    ("Cape Town", "Cape Town", "Western Cape", "ZA", -33.92, 18.42, 4618), ("Johannesburg", "Johannesburg", "Gauteng", "ZA", -26.20, 28.05, 5635),
    ("Casablanca", "Casablanca", "Casablanca-Settat", "MA", 33.57, -7.59, 3359), ("Madrid", "Madrid", "Madrid", "ES", 40.42, -3.70, 3223),
    ("Barcelona", "Barcelona", "Catalonia", "ES", 41.39, 2.17, 1620), ("Berlin", "Berlin", "Berlin", "DE", 52.52, 13.40, 3645),
    ("Hamburg", "Hamburg", "Hamburg", "DE", 53.55, 9.99, 1841), ("Vienna", "Vienna", "Vienna", "AT", 48.21, 16.37, 1911),
    ("Prague", "Prague", "Prague", "CZ", 50.08, 14.44, 1309), ("Warsaw", "Warsaw", "Masovia", "PL", 52.23, 21.01, 1790),
    ("Budapest", "Budapest", "Budapest", "HU", 47.50, 19.04, 1752), ("Bucharest", "Bucharest", "Bucharest", "RO", 44.43, 26.10, 1883),
    ("Sofia", "Sofia", "Sofia City", "BG", 42.70, 23.32, 1242), ("Milan", "Milan", "Lombardy", "IT", 45.46, 9.19, 1352),
    ("Naples", "Naples", "Campania", "IT", 40.85, 14.27, 959), ("Lisbon", "Lisbon", "Lisbon", "PT", 38.72, -9.14, 545),
    ("Porto", "Porto", "Porto", "PT", 41.16, -8.63, 232), ("Amsterdam", "Amsterdam", "North Holland", "NL", 52.37, 4.90, 873),
    ("Rotterdam", "Rotterdam", "South Holland", "NL", 51.92, 4.48, 651), ("Brussels", "Brussels", "Brussels", "BE", 50.85, 4.35, 1209),
    ("Copenhagen", "Copenhagen", "Capital Region", "DK", 55.68, 12.57, 794), ("Oslo", "Oslo", "Oslo", "NO", 59.91, 10.75, 697),
    ("Stockholm", "Stockholm", "Stockholm", "SE", 59.33, 18.07, 975), ("Helsinki", "Helsinki", "Uusimaa", "FI", 60.17, 24.94, 656),
    ("Edinburgh", "Edinburgh", "Scotland", "GB", 55.95, -3.19, 524), ("Glasgow", "Glasgow", "Scotland", "GB", 55.86, -4.25, 635),
    ("Cardiff", "Cardiff", "Wales", "GB", 51.48, -3.18, 362), ("Lyon", "Lyon", "Auvergne-Rhône-Alpes", "FR", 45.76, 4.84, 516),
    ("Marseille", "Marseille", "Provence", "FR", 43.30, 5.37, 870), ("Toulouse", "Toulouse", "Occitania", "FR", 43.60, 1.44, 486),
    ("Toronto", "Toronto", "Ontario", "CA", 43.65, -79.38, 2731), ("Vancouver", "Vancouver", "British Columbia", "CA", 49.28, -123.12, 675),
    ("Calgary", "Calgary", "Alberta", "CA", 51.05, -114.07, 1336), ("Ottawa", "Ottawa", "Ontario", "CA", 45.42, -75.70, 1017),
    ("Mexico City", "Mexico City", "Mexico City", "MX", 19.43, -99.13, 9209), ("Havana", "Havana", "Havana", "CU", 23.11, -82.37, 2130),
    ("Quito", "Quito", "Pichincha", "EC", -0.18, -78.47, 2011), ("Buenos Aires", "Buenos Aires", "Buenos Aires", "AR", -34.60, -58.38, 3075),
    ("Montevideo", "Montevideo", "Montevideo", "UY", -34.90, -56.16, 1319), ("Auckland", "Auckland", "Auckland", "NZ", -36.85, 174.76, 1657),
    ("Wellington", "Wellington", "Wellington", "NZ", -41.29, 174.78, 215), ("Brisbane", "Brisbane", "Queensland", "AU", -27.47, 153.03, 2560),
    ("New York", "New York", "New York", "US", 40.71, -74.01, 8336), ("Los Angeles", "Los Angeles", "California", "US", 34.05, -118.24, 3979),
    ("Chicago", "Chicago", "Illinois", "US", 41.88, -87.63, 2693), ("Houston", "Houston", "Texas", "US", 29.76, -95.37, 2320),
    ("Phoenix", "Phoenix", "Arizona", "US", 33.45, -112.07, 1680), ("Philadelphia", "Philadelphia", "Pennsylvania", "US", 39.95, -75.17, 1584),
    ("San Diego", "San Diego", "California", "US", 32.72, -117.16, 1423), ("Dallas", "Dallas", "Texas", "US", 32.78, -96.80, 1343),
    ("Denver", "Denver", "Colorado", "US", 39.74, -104.99, 727), ("Seattle", "Seattle", "Washington", "US", 47.61, -122.33, 753),
    ("Boston", "Boston", "Massachusetts", "US", 42.36, -71.06, 692), ("Miami", "Miami", "Florida", "US", 25.76, -80.19, 467),
    ("Atlanta", "Atlanta", "Georgia", "US", 33.75, -84.39, 498), ("Detroit", "Detroit", "Michigan", "US", 42.33, -83.05, 639),
    ("Minneapolis", "Minneapolis", "Minnesota", "US", 44.98, -93.27, 429), ("Nashville", "Nashville", "Tennessee", "US", 36.16, -86.78, 689),
    ("New Orleans", "New Orleans", "Louisiana", "US", 29.95, -90.07, 383), ("Anchorage", "Anchorage", "Alaska", "US", 61.22, -149.90, 291),
    ("Honolulu", "Honolulu", "Hawaii", "US", 21.31, -157.86, 345), ("Salt Lake City", "Salt Lake City", "Utah", "US", 40.76, -111.89, 200),
)
IMPERIAL_COUNTRIES = frozenset({"US"})


def _climate(rng: random.Random, lat: float) -> tuple[float, float, float, float]:
    """(mean daily max °C, daily range, rain probability, mean max wind km/h) for July."""
    a = abs(lat)
    if lat >= 0:
        tmax = 33.0 - 0.38 * max(0.0, a - 18.0)
    else:  # southern winter
        tmax = 29.0 - 0.5 * max(0.0, a - 8.0)
    tmax += rng.uniform(-3.0, 3.0)
    return tmax, rng.uniform(6.0, 12.0), rng.uniform(0.1, 0.6), rng.uniform(10.0, 32.0)


def _series(rng: random.Random, lat: float) -> dict[str, list[float | None]]:
    tmax_mean, spread, rain_p, wind_mean = _climate(rng, lat)
    out: dict[str, list[float | None]] = {v: [] for v in VARIABLES}
    anomaly = 0.0
    for _ in range(HORIZON_DAYS):
        anomaly = 0.6 * anomaly + rng.gauss(0.0, 2.2)
        tmax = round(tmax_mean + anomaly, 1)
        rain = round(rng.gammavariate(1.2, 4.0), 1) if rng.random() < rain_p else 0.0
        values = {
            "temperature_2m_max": tmax,
            "temperature_2m_min": round(tmax - spread - rng.uniform(-1.5, 1.5), 1),
            "precipitation_sum": rain,
            "wind_speed_10m_max": round(max(2.0, wind_mean + rng.gauss(0.0, 5.0)), 1),
        }
        for v in VARIABLES:
            out[v].append(None if rng.random() < NULL_SHARE else values[v])
    return out


def generate_weather_fixtures() -> dict[str, Any]:
    rng = random.Random(FIXTURE_SEED)
    ids = rng.sample(range(2_600_000, 2_999_999), len(CITIES))
    cities = []
    for (name, ascii_name, admin1, country, lat, lon, pop), cid in zip(CITIES, ids, strict=True):
        cities.append({
            "id": cid, "name": name, "ascii_name": ascii_name, "admin1": admin1, "country": country,
            "latitude": lat, "longitude": lon, "population": pop * 1000,
            "units": "imperial" if country in IMPERIAL_COUNTRIES else "metric",
            "daily": _series(rng, lat),
        })
    return {
        "version": "sim-v1",
        "start_date": START.isoformat(),
        "horizon_days": HORIZON_DAYS,
        "window_days": WINDOW_DAYS,
        "dates": [(START + timedelta(days=i)).isoformat() for i in range(HORIZON_DAYS)],
        "cities": cities,
    }
