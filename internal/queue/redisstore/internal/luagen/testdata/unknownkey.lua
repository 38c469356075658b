-- unknownkey: K.nope is none of the queue's keys
return redis.call('GET', K.nope)
