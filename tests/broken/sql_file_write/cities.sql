-- the cities, and then some
SELECT name AS city FROM cities;
DELETE FROM cities
